package ai.chalk.compute.server.evaluation.scorer;

import java.util.Map;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;

/** Reads a scorer's input columns from a row, failing the row with a message naming the column when it cannot. */
final class RowValues {

    private RowValues() {}

    static Object value(Map<String, @Nullable Object> row, String column) {
        if (!row.containsKey(column)) {
            throw new RowScoringException(
                    "the row has no column '" + column + "'; its columns are " + new TreeSet<>(row.keySet()));
        }
        Object value = row.get(column);
        if (value == null) {
            throw new RowScoringException("column '" + column + "' is null in this row");
        }
        return value;
    }

    static String text(Map<String, @Nullable Object> row, String column) {
        Object value = value(row, column);
        return value instanceof byte[] bytes
                ? new String(bytes, java.nio.charset.StandardCharsets.UTF_8)
                : String.valueOf(value);
    }
}
