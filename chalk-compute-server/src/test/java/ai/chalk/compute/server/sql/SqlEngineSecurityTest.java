package ai.chalk.compute.server.sql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every way out of a query we know of, each refused: files, globs, the network, extensions, ATTACH, COPY TO, EXPORT,
 * settings, secrets, other environments' datasets and other files of the blob store, through table functions, views
 * and macros alike. A canary file beside the dataset (same directory, readable by the server) must never be read.
 */
class SqlEngineSecurityTest {

    @TempDir
    Path dir;

    private Path canary;
    private Path otherEnvironmentFile;
    private SqlEngine engine;

    @BeforeEach
    void setUp() throws Exception {
        Path data = Files.createDirectories(dir.resolve("blobs"));
        Path mine = ParquetFiles.write(data.resolve("mine.parquet"), "SELECT range AS x FROM range(10)");
        otherEnvironmentFile = ParquetFiles.write(data.resolve("theirs.parquet"), "SELECT 'secret-row' AS s");
        canary = Files.writeString(data.resolve("canary.csv"), "word\nCANARY-7f3a\n");
        DatasetTables tables = environment -> environment.equals("dev")
                ? List.of(new DatasetTable("numbers", "rev_1", List.of(mine), true))
                : List.of(new DatasetTable("numbers", "rev_2", List.of(otherEnvironmentFile), true));
        engine = new SqlEngine(tables, SqlOptions.defaults(), dir.resolve("scratch"));
    }

    static Stream<String> reachingOut() {
        String c = "'CANARY'"; // replaced by the canary's path
        return Stream.of(
                "SELECT * FROM read_csv(" + c + ")",
                "SELECT * FROM read_csv('/etc/passwd')",
                "SELECT * FROM read_csv_auto('/etc/passwd')",
                "SELECT * FROM read_text(" + c + ")",
                "SELECT * FROM read_blob(" + c + ")",
                "SELECT * FROM read_json(" + c + ")",
                "SELECT * FROM read_json_objects(" + c + ")",
                "SELECT * FROM read_ndjson_objects('/etc/passwd')",
                "SELECT * FROM glob('/etc/*')",
                "SELECT * FROM glob('BLOBS/*')",
                "SELECT * FROM sniff_csv(" + c + ")",
                "SELECT * FROM parquet_metadata('THEIRS')",
                "SELECT * FROM parquet_schema('THEIRS')",
                "SELECT * FROM read_parquet('THEIRS')",
                "SELECT * FROM 'THEIRS'",
                "SELECT * FROM read_parquet('BLOBS/*.parquet')",
                "SELECT * FROM read_parquet('https://example.com/x.parquet')",
                "SELECT * FROM read_csv('http://127.0.0.1:1/x.csv')",
                "SELECT * FROM duckdb_secrets()",
                "SELECT * FROM duckdb_extensions()",
                "SELECT * FROM (SELECT * FROM read_text(" + c + ")) t",
                "WITH t AS (SELECT content FROM read_text(" + c + ")) SELECT * FROM t",
                "SELECT (SELECT content FROM read_text(" + c + "))",
                "SELECT * FROM query('SELECT * FROM read_text(''/etc/passwd'')')",
                "SELECT * FROM query_table('THEIRS')",
                "INSTALL httpfs",
                "LOAD httpfs",
                "LOAD 'BLOBS/evil.duckdb_extension'",
                "FORCE INSTALL httpfs",
                "ATTACH 'BLOBS/evil.db' AS evil",
                "ATTACH ':memory:' AS scratch",
                "DETACH chalk",
                "COPY (SELECT 1) TO 'BLOBS/out.csv'",
                "COPY chalk.datasets.numbers TO 'BLOBS/out.parquet'",
                "COPY chalk.datasets.numbers FROM " + c,
                "EXPORT DATABASE 'BLOBS/export'",
                "IMPORT DATABASE 'BLOBS'",
                "SET enable_external_access = true",
                "SET allowed_directories = ['/']",
                "SET memory_limit = '100GB'",
                "RESET memory_limit",
                "PRAGMA enable_profiling",
                "PRAGMA memory_limit = '100GB'",
                "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
                "CREATE MACRO leak() AS TABLE SELECT * FROM read_text(" + c + ")",
                "CREATE VIEW leak AS SELECT * FROM read_text(" + c + ")",
                "CREATE TABLE t AS SELECT 1",
                "SELECT 1; SELECT * FROM read_text(" + c + ")",
                "SET threads = 1; SELECT 1",
                "CALL pragma_version()",
                "SELECT 1) TO 'BLOBS/x.csv' (FORMAT csv); SELECT (1",
                "SELECT 1) TO 'BLOBS/x.csv' (FORMAT csv) --",
                "SELECT * FROM chalk.dataset_revisions.rev_2",
                // the engine's own working directory: other environments' databases write their results there
                "SELECT * FROM glob('SCRATCH/*')",
                "SELECT * FROM glob('SCRATCH/**')",
                "SELECT * FROM read_blob('SCRATCH/**')");
    }

    @ParameterizedTest
    @MethodSource("reachingOut")
    void aQueryThatReachesBeyondItsDatasetsIsRefusedAndReadsNothing(String attack) throws Exception {
        String sql = attack.replace("'CANARY'", "'" + canary + "'")
                .replace("THEIRS", otherEnvironmentFile.toString())
                .replace("BLOBS", canary.getParent().toString())
                .replace("SCRATCH", dir.resolve("scratch").toString());
        try (Stream<Path> before = Files.list(canary.getParent())) {
            long files = before.count();
            assertThatThrownBy(() -> engine.run("dev", sql, 64L << 20, false, cancel -> {}))
                    .isInstanceOf(SqlFailure.class)
                    .satisfies(e -> {
                        SqlFailure f = (SqlFailure) e;
                        assertThat(f.reason()).isIn(SqlFailure.Reason.INVALID, SqlFailure.Reason.FORBIDDEN);
                        assertThat(f.getMessage()).doesNotContain("CANARY-7f3a").doesNotContain("secret-row");
                    });
            try (Stream<Path> after = Files.list(canary.getParent())) {
                assertThat(after.count())
                        .as("nothing written beside the datasets")
                        .isEqualTo(files);
            }
        }
    }

    @Test
    void theCallersOwnDatasetIsReadable() throws Exception {
        SqlEngine.Output out =
                engine.run("dev", "SELECT sum(x) AS total FROM chalk.datasets.numbers", 64L << 20, false, cancel -> {});
        assertThat(out.rows()).isEqualTo(1);
        try (var c = java.sql.DriverManager.getConnection("jdbc:duckdb:");
                var rs = c.createStatement()
                        .executeQuery("SELECT total FROM '" + out.files().get(0) + "'")) {
            rs.next();
            assertThat(rs.getLong(1)).isEqualTo(45);
        }
        engine.discard(out.dir());
    }

    @Test
    void anotherEnvironmentsDatasetOfTheSameNameIsNotSeen() throws Exception {
        SqlEngine.Output out =
                engine.run("dev", "SELECT count(*) FROM chalk.datasets.numbers", 64L << 20, false, cancel -> {});
        try (var c = java.sql.DriverManager.getConnection("jdbc:duckdb:");
                var rs = c.createStatement()
                        .executeQuery("SELECT * FROM '" + out.files().get(0) + "'")) {
            rs.next();
            assertThat(rs.getLong(1)).isEqualTo(10);
        }
        engine.discard(out.dir());
    }

    @Test
    void aSyntaxErrorIsInvalidWithDuckDbsMessage() {
        assertThatThrownBy(() -> engine.run("dev", "SELEC 1", 64L << 20, false, cancel -> {}))
                .isInstanceOf(SqlFailure.class)
                .hasMessageContaining("syntax error at or near \"SELEC\"")
                .extracting(e -> ((SqlFailure) e).reason())
                .isEqualTo(SqlFailure.Reason.INVALID);
    }

    @Test
    void theMemoryLimitHolds() {
        assertThatThrownBy(() -> engine.run(
                        "dev",
                        "SELECT list(range) FROM range(50000000) GROUP BY range % 3",
                        SqlOptions.MIN_MEMORY_BYTES,
                        false,
                        cancel -> {}))
                .isInstanceOf(SqlFailure.class)
                .satisfies(e -> assertThat(((SqlFailure) e).reason()).isEqualTo(SqlFailure.Reason.TOO_LARGE))
                .hasMessageContaining("max_memory_bytes");
    }
}
