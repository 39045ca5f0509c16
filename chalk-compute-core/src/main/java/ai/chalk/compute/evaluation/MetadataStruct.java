package ai.chalk.compute.evaluation;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ListValue;
import com.google.protobuf.NullValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Evaluation and run metadata travel as a protobuf {@code Struct}; users hold them as JSON-shaped maps. Going through
 * Jackson's tree keeps one definition of what is allowed: what Jackson can write as JSON.
 */
final class MetadataStruct {

    private static final ObjectMapper JSON = new ObjectMapper();

    private MetadataStruct() {}

    static Struct toStruct(Map<String, ?> metadata, String what) {
        JsonNode tree;
        try {
            tree = JSON.valueToTree(metadata);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    what + " must be JSON-serializable (strings, numbers, booleans, lists and maps): " + e.getMessage(),
                    e);
        }
        return value(tree).getStructValue();
    }

    private static Value value(JsonNode node) {
        Value.Builder v = Value.newBuilder();
        if (node.isObject()) {
            Struct.Builder s = Struct.newBuilder();
            node.fields().forEachRemaining(e -> s.putFields(e.getKey(), value(e.getValue())));
            v.setStructValue(s);
        } else if (node.isArray()) {
            ListValue.Builder l = ListValue.newBuilder();
            node.forEach(e -> l.addValues(value(e)));
            v.setListValue(l);
        } else if (node.isNumber()) {
            v.setNumberValue(node.asDouble());
        } else if (node.isBoolean()) {
            v.setBoolValue(node.asBoolean());
        } else if (node.isNull() || node.isMissingNode()) {
            v.setNullValue(NullValue.NULL_VALUE);
        } else {
            v.setStringValue(node.asText());
        }
        return v.build();
    }

    static Map<String, Object> toMap(Struct struct) {
        Map<String, Object> map = new LinkedHashMap<>();
        struct.getFieldsMap().forEach((k, v) -> map.put(k, java(v)));
        return Collections.unmodifiableMap(map);
    }

    private static Object java(Value v) {
        return switch (v.getKindCase()) {
            case STRUCT_VALUE -> toMap(v.getStructValue());
            case LIST_VALUE -> {
                List<Object> list = new ArrayList<>();
                v.getListValue().getValuesList().forEach(e -> list.add(java(e)));
                yield Collections.unmodifiableList(list);
            }
            case NUMBER_VALUE -> {
                double d = v.getNumberValue();
                // JSON has one number type: a whole number reads back as the long it was written from
                yield d == Math.rint(d) && Math.abs(d) < 0x1p53 ? (Object) (long) d : (Object) d;
            }
            case BOOL_VALUE -> v.getBoolValue();
            case STRING_VALUE -> v.getStringValue();
            default -> null;
        };
    }
}
