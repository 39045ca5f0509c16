package ai.chalk.compute.sql;

import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An aggregate over a 10-million-row dataset uploaded to a server over TCP, through {@link SQLClient#query} (the
 * environment's locked DuckDB, the result as inline Parquet over gRPC), against the same query on DuckDB JDBC directly
 * over the same Parquet files (the uploaded blobs), in one run. Prints medians and their ratio (target at most 1.3);
 * asserts no timing. Run: {@code ./mvnw -o -B verify -pl chalk-compute-core -am -Dtest=SqlQueryBenchmark
 * -Dsurefire.failIfNoSpecifiedTests=false}.
 */
@Tag("benchmark")
class SqlQueryBenchmark {

    private static final int ROWS = 10_000_000;
    private static final int ROUNDS = 25;
    private static final String AGGREGATE =
            "SELECT region, count(*) AS n, sum(amount) AS total, avg(amount) AS mean FROM %s GROUP BY region"
                    + " ORDER BY region";

    @Test
    void aggregateThroughSqlClientVersusDuckDbDirectly(@TempDir Path dir) throws Exception {
        Path source = dir.resolve("orders.parquet");
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            s.execute("COPY (SELECT range AS id, 'region_' || (range % 50) AS region, (range * 7) % 1000 AS amount"
                    + " FROM range(" + ROWS + ")) TO '" + source + "' (FORMAT parquet)");
        }
        System.out.printf("dataset: %,d rows, %,d bytes of Parquet%n", ROWS, Files.size(source));
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dir.resolve("data"))
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SQLClient sql = SQLClient.connect(ConnectionSettings.forTarget(
                        "127.0.0.1:" + server.port().getAsInt()))) {
            ManagedChannel channel = ConnectionSettings.forTarget(
                            "127.0.0.1:" + server.port().getAsInt())
                    .openChannel();
            long uploadStart = System.nanoTime();
            new DatasetUploads(channel).upload("orders", source);
            channel.shutdownNow();
            System.out.printf("upload: %.0f ms%n", (System.nanoTime() - uploadStart) / 1e6);

            // the same files the server reads: the blobs of the uploaded revision
            List<Path> blobs;
            try (Stream<Path> walk = Files.walk(dir.resolve("data/blobs/sha256"))) {
                blobs = walk.filter(Files::isRegularFile).toList();
            }
            String directTable = "read_parquet(["
                    + String.join(", ", blobs.stream().map(p -> "'" + p + "'").toList()) + "])";

            long[] viaClient = new long[ROUNDS];
            long[] viaJdbc = new long[ROUNDS];
            String expected = null;
            try (Connection c = DriverManager.getConnection("jdbc:duckdb:")) {
                for (int i = -2; i < ROUNDS; i++) { // two warm-up rounds each
                    // alternate which goes first, so neither always runs on caches the other warmed
                    long[] jdbc = new long[1];
                    long[] total = new long[1];
                    Runnable direct = () -> {
                        long t = System.nanoTime();
                        try (Statement s = c.createStatement();
                                ResultSet rs = s.executeQuery(String.format(AGGREGATE, directTable))) {
                            while (rs.next()) {
                                total[0] += rs.getLong(3);
                            }
                        } catch (java.sql.SQLException e) {
                            throw new IllegalStateException(e);
                        }
                        jdbc[0] = System.nanoTime() - t;
                    };
                    if (i % 2 == 0) {
                        direct.run();
                    }
                    long t0 = System.nanoTime();
                    SqlResult result = sql.query(String.format(AGGREGATE, "chalk.datasets.orders"));
                    long clientNanos = System.nanoTime() - t0;
                    if (i % 2 != 0) {
                        direct.run();
                    }
                    if (i >= 0) {
                        System.out.printf(
                                "round %2d: client %6.1f ms (server: %s), JDBC %6.1f ms%n",
                                i,
                                clientNanos / 1e6,
                                result.summary().replaceAll(".*took: ", "engine "),
                                jdbc[0] / 1e6);
                        viaClient[i] = clientNanos;
                        viaJdbc[i] = jdbc[0];
                    }
                    if (expected == null) {
                        expected = String.valueOf(total[0]);
                        long clientTotal = result.rows().stream()
                                .mapToLong(r -> ((Number) r.get("total")).longValue())
                                .sum();
                        System.out.println("totals agree: " + (clientTotal == total[0]) + " (" + total[0] + ")");
                    }
                }
            }
            double client = median(viaClient);
            double jdbc = median(viaJdbc);
            System.out.printf(
                    "SQLClient.query (TCP, the environment's locked DuckDB, inline Parquet): median %.1f ms%n", client);
            System.out.printf("DuckDB JDBC directly over the same Parquet:                 median %.1f ms%n", jdbc);
            System.out.printf("ratio of medians: %.2f (target <= 1.3)%n", client / jdbc);
            System.out.printf(
                    "fastest rounds: SQLClient %.1f ms, JDBC %.1f ms, ratio %.2f%n",
                    min(viaClient), min(viaJdbc), min(viaClient) / min(viaJdbc));
        }
    }

    private static double min(long[] nanos) {
        return Arrays.stream(nanos).min().orElseThrow() / 1e6;
    }

    private static double median(long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2] / 1e6;
    }
}
