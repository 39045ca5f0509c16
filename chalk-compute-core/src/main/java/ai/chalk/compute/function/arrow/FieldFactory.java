package ai.chalk.compute.function.arrow;

import com.fasterxml.jackson.databind.node.ArrayNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/** Builds the Arrow field of a resolved type. */
final class FieldFactory {

    /** The name of a list's element field, as pyarrow names it. */
    static final String LIST_ITEM = "item";

    private FieldFactory() {}

    /**
     * The field for values of a type.
     *
     * @param name     the field's name
     * @param type     the resolved type
     * @param metadata metadata to add to the field itself
     */
    static Field field(String name, ValueType type, Map<String, String> metadata) {
        return field(name, type, type.nullable(), metadata);
    }

    private static Field field(String name, ValueType type, boolean nullable, Map<String, String> extra) {
        Map<String, String> metadata = new LinkedHashMap<>(extra);
        if (type instanceof ValueType.Scalar s) {
            return leaf(name, nullable, s.kind().arrowType(), metadata);
        }
        if (type instanceof ValueType.EnumType e) {
            metadata.putIfAbsent(ChalkMetadata.JAVA_TYPE, e.javaType().getName());
            metadata.putIfAbsent(ChalkMetadata.ENUM_CONSTANTS, constantsJson(e));
            return leaf(name, nullable, ArrowType.Utf8.INSTANCE, metadata);
        }
        if (type instanceof ValueType.RecordType r) {
            metadata.putIfAbsent(ChalkMetadata.JAVA_TYPE, r.javaType().getName());
            List<Field> children = new ArrayList<>();
            for (ValueType.Component component : r.components()) {
                children.add(field(component.name(), component.type(), Map.of()));
            }
            return new Field(
                    name, new FieldType(nullable, ArrowType.Struct.INSTANCE, null, orNull(metadata)), children);
        }
        if (type instanceof ValueType.ListType l) {
            return new Field(
                    name,
                    new FieldType(nullable, ArrowType.List.INSTANCE, null, orNull(metadata)),
                    List.of(field(LIST_ITEM, l.element(), Map.of())));
        }
        if (type instanceof ValueType.MapType m) {
            Field entries = new Field(
                    MapVector.DATA_VECTOR_NAME,
                    FieldType.notNullable(ArrowType.Struct.INSTANCE),
                    List.of(
                            field(MapVector.KEY_NAME, m.key(), false, Map.of()),
                            field(MapVector.VALUE_NAME, m.value(), Map.of())));
            return new Field(
                    name, new FieldType(nullable, new ArrowType.Map(false), null, orNull(metadata)), List.of(entries));
        }
        if (type instanceof ValueType.OptionalType o) {
            return field(name, o.content(), true, metadata);
        }
        ValueType.CustomType c = (ValueType.CustomType) type;
        Map<String, String> identity = new HashMap<>(c.codec().metadata());
        identity.put(ChalkMetadata.JAVA_TYPE, c.codec().javaType().getName());
        identity.forEach(metadata::putIfAbsent);
        return c.codec().storageField(field(name, c.storage(), nullable, metadata));
    }

    private static Field leaf(String name, boolean nullable, ArrowType arrowType, Map<String, String> metadata) {
        return new Field(name, new FieldType(nullable, arrowType, null, orNull(metadata)), null);
    }

    private static Map<String, String> orNull(Map<String, String> metadata) {
        return metadata.isEmpty() ? null : metadata;
    }

    private static String constantsJson(ValueType.EnumType type) {
        ArrayNode names = Json.MAPPER.createArrayNode();
        for (Object constant : type.constants()) {
            names.add(((Enum<?>) constant).name());
        }
        return names.toString();
    }
}
