package ai.chalk.compute.function;

import ai.chalk.compute.function.arrow.TypeNames;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.util.Optional;
import java.util.StringJoiner;

/** A method as it reads in messages: {@code com.acme.Fns.score(String text, Object x)}. */
final class MethodText {

    private MethodText() {}

    static String of(Method method) {
        StringJoiner parameters = new StringJoiner(", ", "(", ")");
        for (Parameter parameter : method.getParameters()) {
            parameters.add(TypeNames.simple(parameter.getParameterizedType())
                    + nameOf(parameter).map(n -> " " + n).orElse(""));
        }
        return method.getDeclaringClass().getName() + "." + method.getName() + parameters;
    }

    /** The parameter's name from {@link Param}, else from the class file when it was compiled with {@code -parameters}. */
    static Optional<String> nameOf(Parameter parameter) {
        Param param = parameter.getAnnotation(Param.class);
        if (param != null) {
            return Optional.of(param.value());
        }
        return parameter.isNamePresent() ? Optional.of(parameter.getName()) : Optional.empty();
    }
}
