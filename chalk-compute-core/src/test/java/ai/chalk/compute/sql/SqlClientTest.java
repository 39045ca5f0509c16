package ai.chalk.compute.sql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.error.InvalidRequestException;
import ai.chalk.compute.error.SqlQueryNotFoundException;
import ai.chalk.compute.server.sql.DatasetTable;
import ai.chalk.compute.server.sql.ParquetFiles;
import ai.chalk.compute.server.sql.SqlOptions;
import ai.chalk.compute.server.sql.SqlTestServer;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SQLClient against the real SQL service: DuckDB over real Parquet, results inline and as shards downloaded over the
 * server's HTTP port (links signed, expiring), background jobs, in-process and over TCP.
 */
class SqlClientTest {

    @TempDir
    Path dir;

    private SqlTestServer server;
    private SQLClient sql;

    @BeforeEach
    void setUp() throws Exception {
        Path orders = ParquetFiles.write(
                dir.resolve("orders.parquet"),
                "SELECT range AS id, ['north','south','east'][range % 3 + 1] AS region, range * 2 AS amount"
                        + " FROM range(300000)");
        // links live 2 s so a test can see one expire and be refreshed
        server = new SqlTestServer(
                dir.resolve("data"),
                environment -> List.of(new DatasetTable("orders", "rev_1", List.of(orders), true)),
                SqlOptions.defaults(),
                Duration.ofSeconds(2));
        sql = SQLClient.inProcess(server.inProcessName);
    }

    @AfterEach
    void tearDown() {
        sql.close();
        server.close();
    }

    @Test
    void aQueryReturnsItsResultInlineAsRowsAndArrow() {
        SqlResult result = sql.query(
                "SELECT region, count(*) AS n, sum(amount) AS total FROM chalk.datasets.orders GROUP BY region"
                        + " ORDER BY region");
        assertThat(result.queryId()).startsWith("sql_");
        assertThat(result.isPersisted()).isFalse();
        assertThat(result.summary()).contains("rows: 3");
        List<Map<String, Object>> rows = result.rows();
        assertThat(rows).extracting(r -> r.get("region")).containsExactly("east", "north", "south");
        assertThat(rows).extracting(r -> ((Number) r.get("n")).longValue()).containsOnly(100000L);
        try (BufferAllocator allocator = new RootAllocator();
                VectorSchemaRoot table = result.toArrow(allocator)) {
            assertThat(table.getRowCount()).isEqualTo(3);
            assertThat(((BigIntVector) table.getVector("n")).get(0)).isEqualTo(100000L);
        }
    }

    @Test
    void aPersistedResultDownloadsEveryShardAndRefusesToOverwrite() throws Exception {
        SqlResult result = sql.query("SELECT * FROM chalk.datasets.orders", true);
        assertThat(result.isPersisted()).isTrue();
        assertThat(result.links()).isNotEmpty().allSatisfy(l -> assertThat(l).startsWith("http://127.0.0.1:"));
        Path out = dir.resolve("out");
        List<Path> files = result.download(out);
        assertThat(files).hasSize(result.links().size());
        try (var c = DriverManager.getConnection("jdbc:duckdb:");
                var rs = c.createStatement()
                        .executeQuery("SELECT count(*), sum(amount) FROM read_parquet('" + out + "/*.parquet')")) {
            rs.next();
            assertThat(rs.getLong(1)).isEqualTo(300000);
            assertThat(rs.getLong(2)).isEqualTo(2L * 299999 * 300000 / 2);
        }
        long before = Files.size(files.get(0));
        assertThatThrownBy(() -> result.download(out))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("part-00000.parquet")
                .hasMessageContaining("refusing to overwrite");
        assertThat(Files.size(files.get(0))).isEqualTo(before);
    }

    @Test
    void anExpiredLinkIsRefreshedWhileDownloading() throws Exception {
        SqlResult result = sql.query("SELECT id FROM chalk.datasets.orders WHERE id < 10", true);
        String stale = result.links().get(0);
        Thread.sleep(3500);
        var http = java.net.http.HttpClient.newHttpClient();
        var refused = http.send(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create(stale)).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(refused.statusCode()).isEqualTo(403);
        List<Path> files = result.download(dir.resolve("late"));
        assertThat(result.links().get(0)).isNotEqualTo(stale);
        assertThat(Files.size(files.get(0))).isPositive();
    }

    @Test
    void aSubmittedJobIsAwaitedAndResumedById() {
        SqlJob job =
                sql.submit("SELECT region, max(amount) AS top FROM chalk.datasets.orders GROUP BY region", "batch");
        assertThat(job.status()).isEqualTo(SqlJobStatus.RUNNING);
        SqlResult result = job.await(Duration.ofMinutes(2));
        assertThat(job.status()).isEqualTo(SqlJobStatus.SUCCEEDED);
        assertThat(result.rows()).hasSize(3);
        SqlJob resumed = sql.getJob(job.queryId());
        assertThat(resumed.status()).isEqualTo(SqlJobStatus.SUCCEEDED);
        assertThat(resumed.result().orElseThrow().rows()).hasSize(3);
    }

    @Test
    void aWaitThatTimesOutLeavesTheJobRunning() {
        SqlJob job = sql.submit("SELECT sum(hash(range)) AS h FROM range(600000000)", null);
        assertThatThrownBy(() -> job.await(Duration.ofMillis(100)))
                .isInstanceOf(SqlJobTimeoutException.class)
                .hasMessageContaining(job.queryId())
                .hasMessageContaining("still running");
        assertThat(sql.getJob(job.queryId()).status()).isEqualTo(SqlJobStatus.RUNNING);
        assertThat(job.await(Duration.ofMinutes(3)).rows()).hasSize(1);
    }

    @Test
    void aFailedJobThrowsWithTheServersMessage() {
        SqlJob job = sql.submit("SELECT * FROM read_text('/etc/passwd')");
        assertThatThrownBy(() -> job.await(Duration.ofMinutes(1)))
                .isInstanceOf(SqlException.class)
                .hasMessageContaining("/etc/passwd")
                .hasMessageContaining("file system operations are disabled");
        assertThat(job.status()).isEqualTo(SqlJobStatus.FAILED);
    }

    @Test
    void refusalsAreTypedExceptions() {
        assertThatThrownBy(() -> sql.query("SELEC 1"))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessageContaining("syntax error");
        assertThatThrownBy(() -> sql.query("ATTACH '/tmp/x.db' AS x"))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessageContaining("only queries run here");
        assertThatThrownBy(() -> sql.getJob("sql_nope")).isInstanceOf(SqlQueryNotFoundException.class);
    }

    @Test
    void explainShowsThePlan() {
        assertThat(sql.explain("SELECT count(*) FROM chalk.datasets.orders WHERE region = 'north'"))
                .containsIgnoringCase("parquet")
                .containsIgnoringCase("filter");
    }

    @Test
    void overTcp() {
        try (SQLClient tcp = SQLClient.connect(ConnectionSettings.forTarget(server.tcpTarget()))) {
            SqlResult result = tcp.query("SELECT count(*) AS n FROM chalk.datasets.orders", true);
            assertThat(result.rows()).containsExactly(Map.of("n", 300000L));
        }
    }
}
