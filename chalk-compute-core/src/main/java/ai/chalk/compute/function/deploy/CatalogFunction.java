package ai.chalk.compute.function.deploy;

import ai.chalk.compute.function.arrow.ChalkMetadata;
import ai.chalk.compute.function.arrow.SchemaProtos;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A function deployed in the environment, as the catalog describes it: enough to show it, collect its required
 * arguments and call it without its code ({@link FunctionDeployer#list()}).
 * <pre>{@code
 * for (CatalogFunction f : client.functions().list()) {
 *     System.out.println(f.name() + " v" + f.currentVersion().version() + " " + f.signature());
 * }
 * }</pre>
 * Record the {@linkplain FunctionVersion#id() version id} of what you show, and call that immutable version
 * ({@code RemoteFunction.fromVersionId(client, id)}), so that what runs is what the user chose.
 *
 * @param name           the function's name
 * @param currentVersion its current version, the one the schemas below are of
 * @param description    what it does ({@code chalk.function.description}); empty when not given
 * @param parameters     its parameters, in order, each with its default when it has one
 * @param output         its result
 * @param generator      whether it yields several results per call ({@code chalk.function.is_generator})
 */
public record CatalogFunction(
        String name,
        FunctionVersion currentVersion,
        Optional<String> description,
        List<CatalogField> parameters,
        CatalogField output,
        boolean generator) {

    /** Checks for nulls and copies the parameters. */
    public CatalogFunction {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(currentVersion, "currentVersion");
        Objects.requireNonNull(description, "description");
        parameters = List.copyOf(parameters);
        Objects.requireNonNull(output, "output");
    }

    /** The parameters a call must give: those without a default. */
    public List<CatalogField> requiredParameters() {
        return parameters.stream().filter(CatalogField::required).toList();
    }

    /** {@code (String name, String separator="-", Long copies=2) -> String}, with Java type names. */
    public String signature() {
        StringBuilder text = new StringBuilder("(");
        for (int i = 0; i < parameters.size(); i++) {
            CatalogField p = parameters.get(i);
            text.append(i == 0 ? "" : ", ")
                    .append(typeName(p))
                    .append(' ')
                    .append(p.name())
                    .append(p.defaultJson().map(d -> "=" + d).orElse(""));
        }
        return text.append(") -> ").append(typeName(output)).toString();
    }

    private static String typeName(CatalogField field) {
        return field.javaType()
                .map(t -> t.getTypeName().replaceAll("\\b[a-z][\\w]*\\.", ""))
                .orElse(field.arrowType());
    }

    static CatalogFunction of(ExternalFunctionVersion version) {
        Schema input = SchemaProtos.fromProto(version.getInputArrowSchema());
        Schema output = SchemaProtos.fromProto(version.getOutputArrowSchema());
        CatalogField result = CatalogField.of(output.getFields().get(0));
        Map<String, String> schemaMetadata = output.getCustomMetadata() == null ? Map.of() : output.getCustomMetadata();
        Optional<String> description = Optional.ofNullable(schemaMetadata.get(ChalkMetadata.FUNCTION_DESCRIPTION))
                .or(() -> Optional.ofNullable(result.metadata().get(ChalkMetadata.FUNCTION_DESCRIPTION)))
                .filter(d -> !d.isEmpty());
        String generator = Optional.ofNullable(schemaMetadata.get(ChalkMetadata.FUNCTION_IS_GENERATOR))
                .orElse(result.metadata().getOrDefault(ChalkMetadata.FUNCTION_IS_GENERATOR, "false"));
        return new CatalogFunction(
                version.getFunctionName(),
                FunctionVersion.of(version, version.getId()),
                description,
                input.getFields().stream().map(CatalogField::of).toList(),
                result,
                Boolean.parseBoolean(generator));
    }
}
