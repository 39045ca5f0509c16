package ai.chalk.compute.dataset;

import com.google.protobuf.Value;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The first rows of a revision and a summary of its columns, as the server computed them.
 *
 * @param rows    the first rows (at most 100), column names to values: {@code Double} for numbers (integers past
 *                2^53 come as text), {@code String}, {@code Boolean}, {@code null}, lists and maps
 * @param columns one summary per column: {@code column_name}, {@code column_type}, {@code min}, {@code max},
 *                {@code approx_unique}, {@code avg}, {@code null_percentage}, ... as DuckDB's SUMMARIZE names them
 */
public record DatasetPreview(List<Map<String, Object>> rows, List<Map<String, Object>> columns) {

    static DatasetPreview of(Value rows, Value summary) {
        List<Map<String, Object>> columns = new ArrayList<>();
        Value described = summary.getStructValue().getFieldsOrDefault("columns", Value.getDefaultInstance());
        described.getListValue().getValuesList().forEach(c -> columns.add(struct(c)));
        List<Map<String, Object>> out = new ArrayList<>();
        rows.getListValue().getValuesList().forEach(r -> out.add(struct(r)));
        return new DatasetPreview(List.copyOf(out), List.copyOf(columns));
    }

    private static Map<String, Object> struct(Value v) {
        Map<String, Object> out = new LinkedHashMap<>();
        v.getStructValue().getFieldsMap().forEach((k, x) -> out.put(k, plain(x)));
        return java.util.Collections.unmodifiableMap(out);
    }

    private static Object plain(Value v) {
        return switch (v.getKindCase()) {
            case NUMBER_VALUE -> v.getNumberValue();
            case STRING_VALUE -> v.getStringValue();
            case BOOL_VALUE -> v.getBoolValue();
            case STRUCT_VALUE -> struct(v);
            case LIST_VALUE -> {
                List<Object> items = new ArrayList<>();
                v.getListValue().getValuesList().forEach(x -> items.add(plain(x)));
                yield java.util.Collections.unmodifiableList(items);
            }
            default -> null;
        };
    }
}
