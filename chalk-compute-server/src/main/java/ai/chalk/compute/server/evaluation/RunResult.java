package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.server.dataset.DatasetManager;
import ai.chalk.compute.server.evaluation.RunTables.ResultRow;
import ai.chalk.compute.server.store.DatasetStore.DatasetColumn;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Lock;
import org.duckdb.DuckDBAppender;
import org.duckdb.DuckDBConnection;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run's result table, built while the run goes on: its input rows, read into the engine in file order (in the
 * background, beside the rows the run reads), and the results of the rows finished so far, appended in row order as soon as every row before them is finished
 * ({@link #advance}), so that what is left when the last scorer ends is the rest of the rows and the Parquet file
 * ({@link #finish}). Appending all 10,000 rows of a run at its end took 17-50 ms, a sixth of the run.
 *
 * <p>The output column's type is the one type every answer has, else JSON text. Rows are appended before the last
 * answer is known: the type is chosen from the first answers, and an answer that does not fit it later (an integer
 * column, then a fraction or a text) makes the table start over at the end with the type of all the answers.
 *
 * <p>Its methods are called by the run's batches as they end, and so are synchronized; the tables are the run's own
 * and are dropped when it closes.
 */
final class RunResult implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RunResult.class);

    /** Bytes of rows read between two reservations of the memory they take. */
    private static final long HOLD_EVERY = 256 << 10;

    private static final String VARCHAR = "VARCHAR";
    private static final String BIGINT = "BIGINT";
    private static final String DOUBLE = "DOUBLE";
    private static final String BOOLEAN = "BOOLEAN";

    private final Connection connection;
    private final Statement statement;
    private final String scan;
    /** The input table's reading, in the background; the result file waits for it. */
    private final CompletableFuture<Void> inputLoaded;
    /** The input table's reading while it runs, so that a run that ends first stops it. */
    private volatile @Nullable Statement loading;
    /** Set as the run's result closes: an input table not begun yet is not read at all. */
    private volatile boolean closing;

    private final String input;
    private final String scored;
    private final List<String> scorerIds;
    private @Nullable DuckDBAppender appender;
    /** The appender's own lock, held around its use beside this object's. */
    private @Nullable Lock appenderLock;
    /** The output column's type once the scored table exists, else null. */
    private @Nullable String outputType;
    /** The rows appended so far: {@code [0, appended)}. */
    private int appended;
    /** While no type is chosen: the rows looked at so far, none of them answered. */
    private int typeScanned;
    /** An append failed while the run went on: the end starts over, and fails the run if it fails again. */
    private boolean startOver;

    private boolean closed;

    /**
     * Starts reading the input rows into the engine, in the background: the table is needed only for the result file,
     * and creating it (6-13 ms for 10,000 rows) held the run's first batches back.
     *
     * @param connection a connection of the run's own, closed with this
     * @param loader     another, which reads the input into its table and is closed then
     * @param tableId    names this run's tables apart from other runs' in the shared engine
     * @param scan       the input files' scan
     * @param scorerIds  the scorers' ids, in the evaluation's order
     * @param executor   runs the reading of the input table
     */
    RunResult(
            Connection connection,
            Connection loader,
            long tableId,
            String scan,
            List<String> scorerIds,
            Executor executor)
            throws SQLException {
        this.connection = connection;
        this.scan = scan;
        this.input = "input_" + tableId;
        this.scored = "scored_" + tableId;
        this.scorerIds = List.copyOf(scorerIds);
        try {
            this.statement = connection.createStatement();
            // a table keeps the scan's order, as the rows read by rows() do, and the appender's the results': the
            // file pairs them by position
            this.inputLoaded = CompletableFuture.runAsync(
                    () -> {
                        try (loader;
                                Statement s = loader.createStatement()) {
                            loading = s;
                            if (!closing) {
                                s.execute("CREATE TABLE " + input + " AS SELECT * FROM " + scan);
                            }
                        } catch (SQLException e) {
                            throw new CompletionException(e);
                        } finally {
                            loading = null;
                        }
                    },
                    executor);
        } catch (SQLException | RuntimeException e) {
            loader.close();
            connection.close();
            throw e;
        }
    }

    /**
     * Every input row, in the files' order, as column name → value.
     *
     * @param memory holds what the rows take in the heap, as they are read
     * @throws RunMemory.ExceededException the rows take more than the run may hold (reading stops there)
     */
    List<Map<String, @Nullable Object>> rows(RunMemory memory) throws SQLException, RunMemory.ExceededException {
        List<Map<String, @Nullable Object>> rows = new ArrayList<>();
        try (ResultSet rs = statement.executeQuery("SELECT * FROM " + scan)) {
            ResultSetMetaData md = rs.getMetaData();
            int columns = md.getColumnCount();
            List<String> names = new ArrayList<>(columns);
            for (int i = 1; i <= columns; i++) {
                names.add(md.getColumnName(i));
            }
            long unheld = 0;
            while (rs.next()) {
                Map<String, @Nullable Object> row = new LinkedHashMap<>();
                long bytes = 64;
                for (int i = 1; i <= columns; i++) {
                    Object value = rs.getObject(i);
                    row.put(names.get(i - 1), value);
                    bytes += 40 + RunMemory.sizeOf(value);
                }
                rows.add(row);
                unheld += bytes;
                if (unheld >= HOLD_EVERY) { // one reservation a row would cost a run more than the reading
                    memory.hold(unheld);
                    unheld = 0;
                }
            }
            memory.hold(unheld);
        }
        return rows;
    }

    /**
     * Appends the finished rows that follow those appended, up to the first row not finished yet. A failure is not
     * the batch's: {@link #finish} starts over and reports it if it fails again.
     *
     * @param results one per input row, null where the row is not finished
     */
    synchronized void advance(@Nullable ResultRow[] results) {
        if (closed || startOver) {
            return;
        }
        int end = appended;
        while (end < results.length && results[end] != null) {
            end++;
        }
        if (end == appended) {
            return;
        }
        try {
            if (outputType == null) {
                // rows before typeScanned answered nothing: each look starts where the last one ended
                String type = outputType(results, typeScanned, end);
                if (type == null) {
                    typeScanned = end;
                    return; // only failed rows so far: the type waits for an answer
                }
                create(type);
            }
            if (!append(results, end)) {
                startOver = true;
            }
        } catch (SQLException | RuntimeException e) {
            log.debug("Appending to {} failed; the run's end starts it over: {}", scored, e.toString());
            startOver = true;
        }
    }

    /** The rows appended so far, in row order from the first. */
    synchronized int appended() {
        return appended;
    }

    /**
     * Appends what is left of the rows and writes the result file: the input columns as the revision has them (one
     * named as a result column is kept as {@code input_<name>}), then {@code output}, each scorer's
     * {@code <id>_score} and {@code <id>_metadata}, and {@code error}.
     *
     * @param results one per input row, all finished
     * @return the file's rows and columns, so that storing it need not read it back
     */
    synchronized DatasetManager.Shape finish(ResultRow[] results, Path target) throws SQLException {
        if (closed) {
            throw new SQLException("the run's result was closed");
        }
        awaitInput();
        if (startOver || outputType != null && !append(results, results.length)) {
            dropScored();
        }
        if (outputType == null) {
            String type = outputType(results, 0, results.length);
            create(type == null ? VARCHAR : type);
            if (!append(results, results.length)) {
                throw new IllegalStateException("an answer does not fit the type of all the answers");
            }
        }
        closeAppender();
        Set<String> resultNames = new HashSet<>(List.of(RunTables.OUTPUT, RunTables.ERROR));
        for (String id : scorerIds) {
            resultNames.add(id + "_score");
            resultNames.add(id + "_metadata");
        }
        List<String> inputs = new ArrayList<>();
        try (ResultSet rs = statement.executeQuery("DESCRIBE " + input)) {
            while (rs.next()) {
                String name = rs.getString("column_name");
                inputs.add(input + "." + RunTables.quote(name)
                        + (resultNames.contains(name) ? " AS " + RunTables.quote("input_" + name) : ""));
            }
        }
        // a positional join scans both tables side by side, in order: neither a hash join on the row number nor a
        // sort by it (the two took most of the result file's time)
        statement.execute("COPY (SELECT " + String.join(", ", inputs) + ", " + scored + ".* FROM " + input
                + " POSITIONAL JOIN " + scored + ") TO " + RunTables.literal(target)
                + " (FORMAT parquet, COMPRESSION zstd)");
        List<DatasetColumn> written = new ArrayList<>();
        try (ResultSet rs =
                statement.executeQuery("DESCRIBE SELECT * FROM read_parquet(" + RunTables.literal(target) + ")")) {
            while (rs.next()) {
                written.add(new DatasetColumn(rs.getString("column_name"), rs.getString("column_type")));
            }
        }
        return new DatasetManager.Shape(results.length, written);
    }

    /** Drops the run's tables and closes its connection. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        closing = true;
        stopReadingInput();
        try {
            awaitInput(); // dropped only once it exists: created after the drop, it would stay
        } catch (SQLException | RuntimeException e) {
            // not created: nothing to drop
        }
        try {
            closeAppender();
        } catch (SQLException | RuntimeException e) {
            // a flush failed before (the engine's memory, say): the rows it held go with the table
            log.debug("Could not close {}'s appender: {}", scored, e.toString());
        }
        try (connection;
                statement) {
            drop(input);
            drop(scored);
        } catch (SQLException | RuntimeException e) {
            log.debug("Could not close {}'s connection: {}", scored, e.toString());
        }
    }

    /**
     * Stops the input table's reading, if it runs: a run failed or canceled early (its rows did not fit, say) need
     * not read the rest of a large input. A cancel reaches only a statement already executing, so it is repeated
     * until the reading ends.
     */
    private void stopReadingInput() {
        while (!inputLoaded.isDone()) {
            Statement reading = loading;
            if (reading != null) {
                try {
                    reading.cancel();
                } catch (SQLException e) {
                    log.debug("Could not stop reading {}: {}", input, e.toString());
                }
            }
            try {
                inputLoaded.get(20, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                // not stopped yet: cancel again
            } catch (ExecutionException e) {
                return; // ended, canceled or failed
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private void drop(String table) {
        try {
            statement.execute("DROP TABLE IF EXISTS " + table);
        } catch (SQLException | RuntimeException e) {
            // the engine is closing with the server: the table goes with it
            log.debug("Could not drop {}: {}", table, e.toString());
        }
    }

    /** Waits for the input table; its failure is the caller's. */
    private void awaitInput() throws SQLException {
        try {
            inputLoaded.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof SQLException sql) {
                throw sql;
            }
            throw e;
        }
    }

    private void create(String type) throws SQLException {
        StringBuilder columns = new StringBuilder(RunTables.quote(RunTables.OUTPUT) + " " + type);
        for (String id : scorerIds) {
            columns.append(", ")
                    .append(RunTables.quote(id + "_score"))
                    .append(" DOUBLE, ")
                    .append(RunTables.quote(id + "_metadata"))
                    .append(" VARCHAR");
        }
        columns.append(", ").append(RunTables.quote(RunTables.ERROR)).append(" VARCHAR");
        statement.execute("CREATE TABLE " + scored + " (" + columns + ")");
        appender = connection.unwrap(DuckDBConnection.class).createAppender("main", scored);
        // the run's batches append from the threads they end on, one at a time (this object's lock): the appender is
        // told so, and refuses nothing for it
        appenderLock = appender.unsafeBreakThreadConfinement();
        outputType = type;
    }

    /**
     * Appends rows {@code [appended, end)}, all finished.
     *
     * @return false when a row's answer does not fit the output column's type (nothing of that row is appended)
     */
    private boolean append(@Nullable ResultRow[] results, int end) throws SQLException {
        DuckDBAppender a = Objects.requireNonNull(appender);
        String type = Objects.requireNonNull(outputType);
        Lock lock = Objects.requireNonNull(appenderLock);
        lock.lock();
        try {
            return appendLocked(a, type, results, end);
        } finally {
            lock.unlock();
        }
    }

    private boolean appendLocked(DuckDBAppender a, String type, @Nullable ResultRow[] results, int end)
            throws SQLException {
        for (; appended < end; appended++) {
            ResultRow row = Objects.requireNonNull(results[appended]);
            Object output = row.output();
            if (output != null && !fits(type, output)) {
                return false;
            }
            a.beginRow();
            if (output == null) {
                a.appendNull();
            } else {
                switch (type) {
                    case BIGINT -> a.append(((Number) output).longValue());
                    case DOUBLE -> a.append(((Number) output).doubleValue());
                    case BOOLEAN -> a.append(((Boolean) output).booleanValue());
                    default -> a.append(RunTables.text(output));
                }
            }
            for (int i = 0; i < scorerIds.size(); i++) {
                Double score = row.scores().get(i);
                if (score == null) {
                    a.appendNull();
                } else {
                    a.append(score.doubleValue());
                }
                a.append(row.metadata().get(i));
            }
            if (row.error() == null) {
                a.appendNull();
            } else {
                a.append(row.error());
            }
            a.endRow();
        }
        return true;
    }

    private void dropScored() throws SQLException {
        try {
            closeAppender();
        } catch (SQLException | RuntimeException e) {
            // its flush failed before, which is why the table starts over: what it held is dropped with it
            log.debug("Could not close {}'s appender: {}", scored, e.toString());
        }
        statement.execute("DROP TABLE IF EXISTS " + scored);
        outputType = null;
        appended = 0;
        typeScanned = 0;
        startOver = false;
    }

    private void closeAppender() throws SQLException {
        if (appender != null) {
            DuckDBAppender a = appender;
            Lock lock = Objects.requireNonNull(appenderLock);
            appender = null;
            appenderLock = null;
            lock.lock();
            try {
                a.close();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * The one type every answer among rows {@code [from, to)} has (integers and fractions together are fractions),
     * else {@code VARCHAR} (JSON text); null when none answered.
     */
    static @Nullable String outputType(@Nullable ResultRow[] results, int from, int to) {
        String type = null;
        for (int r = from; r < to; r++) {
            Object o = Objects.requireNonNull(results[r]).output();
            if (o == null) {
                continue;
            }
            String t = typeOf(o);
            if (type == null || type.equals(t)) {
                type = t;
            } else if (isNumber(type) && isNumber(t)) {
                type = DOUBLE;
            } else {
                return VARCHAR;
            }
            if (type.equals(VARCHAR)) {
                return VARCHAR;
            }
        }
        return type;
    }

    private static String typeOf(Object o) {
        if (o instanceof Long || o instanceof Integer || o instanceof Short || o instanceof Byte) {
            return BIGINT;
        }
        if (o instanceof Number) {
            return DOUBLE;
        }
        if (o instanceof Boolean) {
            return BOOLEAN;
        }
        return VARCHAR;
    }

    private static boolean isNumber(String type) {
        return type.equals(BIGINT) || type.equals(DOUBLE);
    }

    /** Whether an answer can be written in a column of the type chosen from the answers before it. */
    private static boolean fits(String type, Object output) {
        return switch (type) {
            case VARCHAR -> true;
            case DOUBLE -> output instanceof Number;
            default -> typeOf(output).equals(type);
        };
    }
}
