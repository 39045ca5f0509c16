package ai.chalk.compute.function;

import ai.chalk.compute.function.arrow.ArrowTypeMapping;
import ai.chalk.compute.function.arrow.ChalkMetadata;
import ai.chalk.compute.function.arrow.TypeNames;
import ai.chalk.compute.function.arrow.UnsupportedJavaTypeException;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/** Reads an annotated method into a {@link FunctionDefinition}, or says exactly what is wrong with it. */
final class SignatureReader {

    /** The name of the output schema's one field. */
    static final String OUTPUT_FIELD = "output";

    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_-]*");

    private final ArrowTypeMapping mapping;

    SignatureReader(ArrowTypeMapping mapping) {
        this.mapping = mapping;
    }

    /** A {@link ChalkClass} as read once for all its methods. */
    record ClassDeployment(String name, DeploymentOptions deployment, CallOptions callDefaults) {}

    /**
     * Reads a method annotated with {@link ChalkFunction} or {@link ChalkScorer}.
     *
     * @param method    the method
     * @param owner     the class being registered (where a short imageFactory name is looked up)
     * @param classInfo its {@link ChalkClass}, when it has one
     */
    FunctionDefinition read(Method method, Class<?> owner, Optional<ClassDeployment> classInfo) {
        String where = MethodText.of(method);
        ChalkFunction function = method.getAnnotation(ChalkFunction.class);
        ChalkScorer scorer = method.getAnnotation(ChalkScorer.class);
        if (function != null && scorer != null) {
            throw new FunctionDefinitionException(
                    where + ": annotated with both @ChalkFunction and @ChalkScorer; keep one");
        }
        FunctionKind kind = scorer != null ? FunctionKind.SCORER : FunctionKind.FUNCTION;
        DeclaredOptions declared = scorer != null ? DeclaredOptions.of(scorer) : DeclaredOptions.of(function);

        String ownName = declared.name().isEmpty() ? method.getName() : declared.name();
        if (!NAME.matcher(ownName).matches()) {
            throw new FunctionDefinitionException(where + ": name '" + ownName
                    + "' must start with a letter or underscore and contain only letters, digits, '_' and '-'");
        }
        DeploymentOptions deployment;
        CallOptions callOptions = OptionsParser.call(declared, where);
        if (classInfo.isPresent()) {
            List<String> misplaced = declared.deploymentAttributesSet();
            if (!misplaced.isEmpty()) {
                throw new FunctionDefinitionException(
                        where + ": deployment options belong on @ChalkClass " + owner.getName()
                                + ", which serves this method; move " + String.join(", ", misplaced) + " there");
            }
            deployment = classInfo.get().deployment();
            callOptions = callOptions.orElse(classInfo.get().callDefaults());
        } else {
            deployment = OptionsParser.deployment(declared, owner, where);
        }

        List<FunctionParameter> parameters = parameters(method, kind, where);
        Type returnType = method.getGenericReturnType();
        if (returnType == void.class) {
            throw new FunctionSignatureException(where + ": returns void, but a Chalk function returns a value");
        }
        if (kind == FunctionKind.SCORER) {
            ScorerRules.checkReturnType(returnType, where);
            ScorerRules.checkParameterCount(parameters.size(), where);
        }
        Field output;
        try {
            output = mapping.field(OUTPUT_FIELD, returnType);
        } catch (UnsupportedJavaTypeException e) {
            throw new FunctionSignatureException(
                    where + ": " + unsupported("return type " + TypeNames.simple(returnType), "result", e), e);
        }
        Map<String, String> outputMetadata = new LinkedHashMap<>();
        if (!declared.description().isEmpty()) {
            outputMetadata.put(ChalkMetadata.FUNCTION_DESCRIPTION, declared.description());
        }
        outputMetadata.put(ChalkMetadata.FUNCTION_IS_GENERATOR, "false");

        return new FunctionDefinition(
                classInfo.map(c -> c.name() + "." + ownName).orElse(ownName),
                kind,
                method.getDeclaringClass(),
                method,
                classInfo.map(ClassDeployment::name),
                declared.description(),
                deployment,
                callOptions,
                parameters,
                returnType,
                new Schema(parameters.stream().map(FunctionParameter::field).toList()),
                new Schema(List.of(output), outputMetadata));
    }

    private List<FunctionParameter> parameters(Method method, FunctionKind kind, String where) {
        List<FunctionParameter> parameters = new ArrayList<>();
        Parameter[] declared = method.getParameters();
        for (int i = 0; i < declared.length; i++) {
            Parameter parameter = declared[i];
            String name = MethodText.nameOf(parameter)
                    .orElseThrow(() -> new FunctionSignatureException(where
                            + ": parameter names were not compiled into the class file; compile with -parameters "
                            + "(Maven: <maven.compiler.parameters>true</maven.compiler.parameters>) or name each parameter "
                            + "with @Param(\"name\")"));
            if (name.isBlank()) {
                throw new FunctionSignatureException(where + ": parameter " + (i + 1) + " has a blank @Param name");
            }
            for (FunctionParameter earlier : parameters) {
                if (earlier.name().equals(name)) {
                    throw new FunctionSignatureException(where + ": two parameters are named '" + name + "'");
                }
            }
            Type type = parameter.getParameterizedType();
            Optional<String> defaultJson = Optional.empty();
            Default declaredDefault = parameter.getAnnotation(Default.class);
            Field field;
            try {
                if (declaredDefault != null) {
                    defaultJson = Optional.of(canonicalDefault(declaredDefault.value(), type, name, where));
                }
                field = mapping.field(
                        name,
                        type,
                        defaultJson
                                .map(json -> Map.of(ChalkMetadata.DEFAULT, json))
                                .orElse(Map.of()));
            } catch (UnsupportedJavaTypeException e) {
                throw new FunctionSignatureException(
                        where + ": "
                                + unsupported("parameter '" + name + "' has type " + TypeNames.simple(type), name, e),
                        e);
            }
            ParameterRole role = kind == FunctionKind.SCORER ? ScorerRules.roleOf(name) : ParameterRole.COLUMN;
            parameters.add(new FunctionParameter(name, type, defaultJson, role, field));
        }
        return parameters;
    }

    private String canonicalDefault(String json, Type type, String name, String where) {
        try {
            return mapping.canonicalJson(json, type);
        } catch (UnsupportedJavaTypeException e) {
            throw e; // reported as the parameter's type problem, which it is
        } catch (IllegalArgumentException e) {
            throw new FunctionSignatureException(
                    where + ": parameter '" + name + "' has @Default(" + quote(json) + "), but " + e.getMessage(), e);
        }
    }

    private static String quote(String json) {
        return "\"" + json.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /**
     * "parameter 'x' has type Object, which has no Arrow mapping; use ..." or, for a type inside it,
     * "parameter 'p' has type Person; p.tags[] has type Object, which has no Arrow mapping; use ...".
     */
    private static String unsupported(String subject, String root, UnsupportedJavaTypeException e) {
        String unsupported = TypeNames.simple(e.unsupportedType());
        if (e.path().isEmpty()) {
            return subject
                    + (subject.startsWith("return type") ? " has no Arrow mapping; " : ", which has no Arrow mapping; ")
                    + e.hint();
        }
        return subject + "; " + root + e.path() + " has type " + unsupported + ", which has no Arrow mapping; "
                + e.hint();
    }
}
