package ai.chalk.compute.function.deploy;

import ai.chalk.compute.function.arrow.ArrowTypeMapping;
import ai.chalk.compute.function.arrow.ChalkMetadata;
import ai.chalk.compute.function.arrow.GenericJavaTypes;
import java.lang.reflect.Type;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * A parameter or the result of a {@linkplain CatalogFunction function in the catalog}, read from its Arrow schema.
 *
 * @param name         the parameter's name ({@code output} for the result)
 * @param javaType     the generic Java type its values take ({@code Long}, {@code String}, {@code List<Double>},
 *                     {@code Map<String, Object>}, a {@code Sandbox}...; see {@link GenericJavaTypes}); empty when
 *                     the Arrow type has none (a struct no custom type names), so that {@link #arrowType()} is all
 *                     there is
 * @param arrowType    the Arrow type as Arrow writes it, such as {@code Int(64, true)}
 * @param nullable     whether values may be null
 * @param defaultJson  the parameter's declared default, as JSON ({@code chalk.default}); empty when it has none
 * @param metadata     the field's metadata as published, such as {@code chalk.python.type}
 */
public record CatalogField(
        String name,
        Optional<Type> javaType,
        String arrowType,
        boolean nullable,
        Optional<String> defaultJson,
        Map<String, String> metadata) {

    /** Checks for nulls and copies the metadata. */
    public CatalogField {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(javaType, "javaType");
        Objects.requireNonNull(arrowType, "arrowType");
        Objects.requireNonNull(defaultJson, "defaultJson");
        metadata = Map.copyOf(metadata);
    }

    /** Whether a call must give it: it has no default. */
    public boolean required() {
        return defaultJson.isEmpty();
    }

    static CatalogField of(Field field) {
        Optional<Type> java;
        try {
            java = Optional.of(GenericJavaTypes.of(field, ArrowTypeMapping.standard()));
        } catch (IllegalArgumentException e) {
            java = Optional.empty();
        }
        Map<String, String> metadata = field.getMetadata() == null ? Map.of() : field.getMetadata();
        return new CatalogField(
                field.getName(),
                java,
                field.getType().toString(),
                field.isNullable(),
                Optional.ofNullable(metadata.get(ChalkMetadata.DEFAULT)),
                metadata);
    }
}
