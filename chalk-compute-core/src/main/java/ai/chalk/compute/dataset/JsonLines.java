package ai.chalk.compute.dataset;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.temporal.TemporalAccessor;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.util.Text;

/**
 * Rows written as JSON lines (one object per line) to a file, the form in which rows, column maps and Arrow data
 * travel: the server reads it with its types (numbers, booleans, text, ISO dates and timestamps, nested lists and
 * objects) and stores it as Parquet. Written to a file first because an upload announces its size.
 */
final class JsonLines implements AutoCloseable {

    private static final JsonFactory FACTORY = new JsonFactory();

    private final OutputStream out;
    private final JsonGenerator json;
    private long rows;

    JsonLines(Path file) throws IOException {
        this.out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16);
        this.json = FACTORY.createGenerator(out);
        json.setRootValueSeparator(null);
    }

    /** Rows written so far. */
    long rows() {
        return rows;
    }

    /** Writes one row: column names to values. */
    void row(Map<String, ?> row) throws IOException {
        json.writeStartObject();
        for (Map.Entry<String, ?> e : row.entrySet()) {
            json.writeFieldName(String.valueOf(e.getKey()));
            value(e.getKey(), e.getValue());
        }
        endRow();
    }

    /** Writes the rows of columns of equal length. */
    void columns(Map<String, ? extends List<?>> columns) throws IOException {
        int n = -1;
        for (Map.Entry<String, ? extends List<?>> e : columns.entrySet()) {
            if (n >= 0 && e.getValue().size() != n) {
                throw new IllegalArgumentException("every column must have as many values as the others: column \""
                        + e.getKey() + "\" has " + e.getValue().size() + " where the ones before have " + n);
            }
            n = e.getValue().size();
        }
        for (int i = 0; i < Math.max(n, 0); i++) {
            json.writeStartObject();
            for (Map.Entry<String, ? extends List<?>> e : columns.entrySet()) {
                json.writeFieldName(e.getKey());
                value(e.getKey(), e.getValue().get(i));
            }
            endRow();
        }
    }

    /** Writes the rows of an Arrow batch. */
    void arrow(VectorSchemaRoot root) throws IOException {
        List<FieldVector> vectors = root.getFieldVectors();
        for (int i = 0; i < root.getRowCount(); i++) {
            json.writeStartObject();
            for (FieldVector v : vectors) {
                json.writeFieldName(v.getName());
                value(v.getName(), arrowValue(v, i));
            }
            endRow();
        }
    }

    private void endRow() throws IOException {
        json.writeEndObject();
        json.writeRaw('\n');
        rows++;
    }

    /** Arrow's own objects for a cell, made plain where they are not (days, instants of zoned timestamps). */
    private static Object arrowValue(FieldVector v, int i) {
        if (v.isNull(i)) {
            return null;
        }
        if (v instanceof DateDayVector d) {
            return LocalDate.ofEpochDay(d.get(i));
        }
        if (v instanceof TimeStampVector t
                && v.getField().getType() instanceof ArrowType.Timestamp ts
                && ts.getTimezone() != null) {
            long value = t.get(i);
            return switch (ts.getUnit()) {
                case SECOND -> Instant.ofEpochSecond(value);
                case MILLISECOND -> Instant.ofEpochMilli(value);
                case MICROSECOND ->
                    Instant.ofEpochSecond(
                            TimeUnit.MICROSECONDS.toSeconds(value), Math.floorMod(value, 1_000_000L) * 1000);
                case NANOSECOND ->
                    Instant.ofEpochSecond(TimeUnit.NANOSECONDS.toSeconds(value), Math.floorMod(value, 1_000_000_000L));
            };
        }
        return v.getObject(i);
    }

    private void value(String column, Object v) throws IOException {
        if (v == null) {
            json.writeNull();
        } else if (v instanceof Boolean b) {
            json.writeBoolean(b);
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            json.writeNumber(((Number) v).longValue());
        } else if (v instanceof BigInteger b) {
            json.writeNumber(b);
        } else if (v instanceof BigDecimal b) {
            json.writeNumber(b);
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (!Double.isFinite(d)) {
                throw new IllegalArgumentException("column \"" + column + "\" holds " + d
                        + ", which JSON lines cannot carry: upload such values in a Parquet file");
            }
            json.writeNumber(d);
        } else if (v instanceof CharSequence
                || v instanceof Character
                || v instanceof Text
                || v instanceof UUID
                || v instanceof Enum<?>) {
            json.writeString(v.toString());
        } else if (v instanceof TemporalAccessor) {
            json.writeString(v.toString()); // ISO-8601, which the server reads as a date, time or timestamp
        } else if (v instanceof byte[] bytes) {
            json.writeString(Base64.getEncoder().encodeToString(bytes));
        } else if (v instanceof Map<?, ?> map) {
            json.writeStartObject();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                json.writeFieldName(String.valueOf(e.getKey()));
                value(column, e.getValue());
            }
            json.writeEndObject();
        } else if (v instanceof Iterable<?> items) {
            json.writeStartArray();
            for (Iterator<?> it = items.iterator(); it.hasNext(); ) {
                value(column, it.next());
            }
            json.writeEndArray();
        } else if (v instanceof Object[] items) {
            value(column, java.util.Arrays.asList(items));
        } else {
            throw new IllegalArgumentException(
                    "column \"" + column + "\" holds a " + v.getClass().getName()
                            + ", which cannot be uploaded: use numbers, booleans, text, dates and times, byte arrays, lists"
                            + " and maps");
        }
    }

    @Override
    public void close() throws IOException {
        json.close();
        out.close();
    }
}
