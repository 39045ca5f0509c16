package ai.chalk.compute.server.sql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.protosql.v1.ExecuteSqlAsyncExecutionMode;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlAsyncQueryRequestOptions;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlQueryResponse;
import ai.chalk.compute.proto.protosql.v1.GetDbCatalogsRequest;
import ai.chalk.compute.proto.protosql.v1.GetDbSchemasRequest;
import ai.chalk.compute.proto.protosql.v1.GetOfflineQueryStatsRequest;
import ai.chalk.compute.proto.protosql.v1.GetTablesRequest;
import ai.chalk.compute.proto.protosql.v1.PlanSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.PollSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.PollSqlQueryResponse;
import ai.chalk.compute.proto.protosql.v1.SqlServiceGrpc;
import ai.chalk.compute.proto.protosql.v1.TableInfo;
import ai.chalk.compute.server.auth.TrustedCallers;
import ai.chalk.compute.server.store.Database;
import ai.chalk.compute.server.store.SqlJobStore;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.stub.MetadataUtils;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** SqlService over gRPC: environments, plans, the catalog, polling, limits, and jobs a restart interrupted. */
@Tag("alone")
class SqlServiceTest {

    @TempDir
    Path dir;

    private DatasetTables tables;
    private SqlTestServer server;
    private ManagedChannel channel;

    @BeforeEach
    void setUp() throws Exception {
        Path dev = ParquetFiles.write(dir.resolve("dev.parquet"), "SELECT range AS id, range % 3 AS g FROM range(100)");
        Path old = ParquetFiles.write(dir.resolve("old.parquet"), "SELECT range AS id, range % 3 AS g FROM range(5)");
        Path prod = ParquetFiles.write(dir.resolve("prod.parquet"), "SELECT 'prod-only' AS s");
        tables = environment -> switch (environment) {
            case "dev" ->
                List.of(
                        new DatasetTable("orders", "rev_dev_2", List.of(dev), true),
                        new DatasetTable("orders", "rev_dev_1", List.of(old), false));
            case "prod" -> List.of(new DatasetTable("orders", "rev_prod_1", List.of(prod), true));
            default -> List.of();
        };
        serve(tables, SqlOptions.defaults());
    }

    /** Starts a server on the test's data directory, serving {@code served}, and the channel to it. */
    private void serve(DatasetTables served, SqlOptions options) throws java.io.IOException {
        server = new SqlTestServer(dir.resolve("data"), served, options, Duration.ofMinutes(5));
        channel = InProcessChannelBuilder.forName(server.inProcessName).build();
    }

    /** {@code SELECT count(*)} of {@code table}, as {@code environment} runs it. */
    private long rows(String environment, String table) throws Exception {
        ExecuteSqlQueryResponse counted = stub(environment)
                .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                        .setQuery("SELECT count(*) FROM " + table)
                        .build());
        return single(counted.getSyncPayload().getParquetResponse().toByteArray(), dir);
    }

    /** Stops the server and its channel, then starts another on the same data directory. */
    private void restart(DatasetTables served, SqlOptions options) throws java.io.IOException {
        channel.shutdownNow();
        server.close();
        serve(served, options);
    }

    @AfterEach
    void tearDown() {
        channel.shutdownNow();
        server.close();
    }

    private SqlServiceGrpc.SqlServiceBlockingStub stub(String environment) {
        return stub(channel, environment);
    }

    private static SqlServiceGrpc.SqlServiceBlockingStub stub(ManagedChannel channel, String environment) {
        Metadata headers = new Metadata();
        headers.put(TrustedCallers.ENVIRONMENT_HEADER, environment);
        return SqlServiceGrpc.newBlockingStub(channel)
                .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
    }

    private static long single(byte[] parquet, Path dir) throws Exception {
        Path file = java.nio.file.Files.write(dir.resolve("r" + System.nanoTime() + ".parquet"), parquet);
        try (var c = DriverManager.getConnection("jdbc:duckdb:");
                var rs = c.createStatement().executeQuery("SELECT * FROM '" + file + "'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void eachEnvironmentSeesOnlyItsOwnDatasets() throws Exception {
        ExecuteSqlQueryResponse dev = stub("dev")
                .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                        .setQuery("SELECT count(*) FROM chalk.datasets.orders")
                        .build());
        assertThat(single(dev.getSyncPayload().getParquetResponse().toByteArray(), dir))
                .isEqualTo(100);
        assertThatThrownBy(() -> stub("staging")
                        .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                                .setQuery("SELECT * FROM chalk.datasets.orders")
                                .build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                    assertThat(e.getStatus().getDescription())
                            .contains("orders")
                            .contains("does not exist");
                });
        // another environment's revision, named by its id, is not there either
        assertThatThrownBy(() -> stub("dev")
                        .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                                .setQuery("SELECT * FROM chalk.dataset_revisions.rev_prod_1")
                                .build()))
                .isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("INVALID_ARGUMENT");
        // and another environment cannot poll the query
        assertThatThrownBy(() -> stub("prod")
                        .pollSqlQuery(PollSqlQueryRequest.newBuilder()
                                .setOperationId(dev.getQueryId())
                                .build()))
                .isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("NOT_FOUND");
    }

    /**
     * A result the server's disk has no room for (it keeps a reserve free) is RESOURCE_EXHAUSTED saying so: it was
     * INTERNAL.
     */
    @Test
    void aResultTheDiskHasNoRoomForIsResourceExhausted() throws Exception {
        Path data = dir.resolve("full");
        java.nio.file.Files.createDirectories(data);
        long reserve = java.nio.file.Files.getFileStore(data).getUsableSpace() + (1L << 30);
        try (SqlTestServer full =
                new SqlTestServer(data, tables, SqlOptions.defaults(), Duration.ofMinutes(5), reserve)) {
            ManagedChannel c =
                    InProcessChannelBuilder.forName(full.inProcessName).build();
            try {
                var sql = stub(c, "dev");
                assertThatThrownBy(() -> sql.executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                                .setQuery("SELECT count(*) FROM chalk.datasets.orders")
                                .build()))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                            assertThat(e.getStatus().getDescription()).contains("MiB free and keeps");
                        });
            } finally {
                c.shutdownNow();
            }
        }
    }

    @Test
    void aRevisionIsAddressableByItsId() throws Exception {
        ExecuteSqlQueryResponse old = stub("dev")
                .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                        .setQuery("SELECT count(*) FROM chalk.dataset_revisions.rev_dev_1")
                        .build());
        assertThat(single(old.getSyncPayload().getParquetResponse().toByteArray(), dir))
                .isEqualTo(5);
    }

    @Test
    void aSyntaxErrorIsInvalidArgumentWithDuckDbsMessage() {
        assertThatThrownBy(() -> stub("dev")
                        .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                                .setQuery("SELEC * FROM x")
                                .build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                    assertThat(e.getStatus().getDescription()).contains("syntax error at or near \"SELEC\"");
                });
        // megabytes of SQL are refused before they are parsed or recorded
        assertThatThrownBy(() -> stub("dev")
                        .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                                .setQuery("SELECT '" + "x".repeat(SqlServiceV1.MAX_SQL_CHARS) + "'")
                                .build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                    assertThat(e.getStatus().getDescription()).contains("characters of SQL is more than the 1048576");
                });
        // the server keeps serving
        assertThat(stub("dev")
                        .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                                .setQuery("SELECT 1")
                                .build())
                        .getQueryId())
                .startsWith("sql_");
    }

    @Test
    void readingAFileIsPermissionDenied() {
        assertThatThrownBy(() -> stub("dev")
                        .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                                .setQuery("SELECT * FROM read_csv('/etc/passwd')")
                                .build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
                    assertThat(e.getStatus().getDescription())
                            .contains("/etc/passwd")
                            .contains("chalk.datasets");
                });
    }

    @Test
    void maxMemoryBytesIsCheckedAndTheResourceGroupShown() {
        assertThatThrownBy(() -> stub("dev")
                        .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                                .setQuery("SELECT 1")
                                .setMaxMemoryBytes(1000)
                                .build()))
                .isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("INVALID_ARGUMENT")
                .hasMessageContaining("max_memory_bytes");
        ExecuteSqlQueryResponse ok = stub("dev")
                .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                        .setQuery("SELECT 1")
                        .setMaxMemoryBytes(100L << 20)
                        .setSyncOptions(
                                ai.chalk.compute.proto.protosql.v1.ExecuteSqlSyncQueryRequestOptions.newBuilder()
                                        .setResourceGroup("interactive"))
                        .build());
        assertThat(ok.getPerformanceSummary())
                .contains("resource group: interactive")
                .contains("memory limit: " + (100L << 20))
                .contains("rows: 1");
    }

    @Test
    void planCatalogsSchemasAndTables() {
        String plan = stub("dev")
                .planSqlQuery(PlanSqlQueryRequest.newBuilder()
                        .setQuery("SELECT g, count(*) FROM chalk.datasets.orders GROUP BY g")
                        .build())
                .getLogicalPlan();
        assertThat(plan).containsIgnoringCase("aggregate").containsIgnoringCase("parquet");
        assertThat(stub("dev")
                        .getDbCatalogs(GetDbCatalogsRequest.getDefaultInstance())
                        .getCatalogNamesList())
                .containsExactly("chalk");
        assertThat(stub("dev")
                        .getDbSchemas(GetDbSchemasRequest.newBuilder()
                                .setDbSchemaFilterPattern("data%")
                                .build())
                        .getSchemasList())
                .extracting(s -> s.getDbSchemaName())
                .containsExactly("datasets", "dataset_revisions");
        assertThat(stub("dev").getTables(GetTablesRequest.getDefaultInstance()).getTablesList())
                .extracting(TableInfo::getDbSchemaName, TableInfo::getTableName)
                .containsExactlyInAnyOrder(
                        org.assertj.core.groups.Tuple.tuple("datasets", "orders"),
                        org.assertj.core.groups.Tuple.tuple("dataset_revisions", "rev_dev_2"),
                        org.assertj.core.groups.Tuple.tuple("dataset_revisions", "rev_dev_1"));
        assertThat(stub("staging")
                        .getTables(GetTablesRequest.getDefaultInstance())
                        .getTablesList())
                .isEmpty();
        assertThatThrownBy(() -> stub("dev").getOfflineQueryStats(GetOfflineQueryStatsRequest.getDefaultInstance()))
                .hasMessageContaining("UNIMPLEMENTED")
                .hasMessageContaining("ExecuteSqlQuery");
    }

    @Test
    void queriesNeverReadTheRevisionsSchemasAndGetTablesHoldsABoundedAmountOfThem() throws Exception {
        // a tenant's 20 revisions with a MiB schema each: a query read them all, every time, before
        Path file = ParquetFiles.write(dir.resolve("many.parquet"), "SELECT range AS id FROM range(10)");
        java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
        List<DatasetTable> many = new java.util.ArrayList<>();
        for (int i = 20; i > 0; i--) {
            many.add(new DatasetTable("many", "rev_" + i, List.of(file), i == 20, () -> {
                reads.incrementAndGet();
                return new byte[1 << 20];
            }));
        }
        restart(environment -> many, SqlOptions.defaults());

        assertThat(rows("dev", "chalk.datasets.many")).isEqualTo(10);
        assertThat(stub("dev").getTables(GetTablesRequest.getDefaultInstance()).getTablesCount())
                .isEqualTo(21);
        assertThat(reads)
                .as("schemas read by a query and a listing without them")
                .hasValue(0);

        assertThatThrownBy(() -> stub("dev")
                        .getTables(GetTablesRequest.newBuilder()
                                .setIncludeSchemas(true)
                                .build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                    assertThat(e.getStatus().getDescription())
                            .contains("pass 16 MiB")
                            .contains("table_name_filter_pattern");
                });
        int before = reads.get();
        assertThat(stub("dev")
                        .getTables(GetTablesRequest.newBuilder()
                                .setIncludeSchemas(true)
                                .setTableNameFilterPattern("rev_5")
                                .build())
                        .getTablesList())
                .extracting(
                        t -> t.getTableName() + ": " + t.getTableArrowSchema().size())
                .containsExactly("rev_5: " + (1 << 20));
        assertThat(reads.get() - before)
                .as("schemas read for a listing of one table")
                .isEqualTo(1);
    }

    @Test
    void filterPatternsMatchWithoutBacktrackingAndHaveABound() {
        // as a regular expression, .* forty times then a character no name holds backtracked for good on one core
        String spin = "%".repeat(40) + "!";
        long start = System.nanoTime();
        assertThat(stub("dev")
                        .getDbSchemas(GetDbSchemasRequest.newBuilder()
                                .setDbSchemaFilterPattern(spin)
                                .build())
                        .getSchemasList())
                .isEmpty();
        assertThat(stub("dev")
                        .getTables(GetTablesRequest.newBuilder()
                                .setTableNameFilterPattern("%o%d%e%r%s%" + spin)
                                .build())
                        .getTablesList())
                .isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        assertThat(stub("dev")
                        .getTables(GetTablesRequest.newBuilder()
                                .setDbSchemaFilterPattern("DATA%REV%")
                                .setTableNameFilterPattern("rev_d_v_%")
                                .build())
                        .getTablesList())
                .extracting(TableInfo::getTableName)
                .containsExactlyInAnyOrder("rev_dev_1", "rev_dev_2");
        assertThatThrownBy(() -> stub("dev")
                        .getDbSchemas(GetDbSchemasRequest.newBuilder()
                                .setDbSchemaFilterPattern("%".repeat(LikePattern.MAX_LENGTH + 1))
                                .build()))
                .hasMessageContaining("INVALID_ARGUMENT")
                .hasMessageContaining("at most 1024 characters");
    }

    @Test
    void likePatternsMatchAsFlightSqlSays() {
        assertThat(LikePattern.of("%").matches("")).isTrue();
        assertThat(LikePattern.of("").matches("a")).isFalse();
        assertThat(LikePattern.of("a%c").matches("abbbc")).isTrue();
        assertThat(LikePattern.of("a%c").matches("abbbcd")).isFalse();
        assertThat(LikePattern.of("a_c").matches("abc")).isTrue();
        assertThat(LikePattern.of("a_c").matches("ac")).isFalse();
        assertThat(LikePattern.of("%ab%ab%").matches("xabyyabz")).isTrue();
        assertThat(LikePattern.of("%aab").matches("aaab")).isTrue();
        assertThat(LikePattern.of("Orders").matches("ORDERS")).isTrue();
        assertThat(LikePattern.of(".*").matches("orders"))
                .as("the rest is literal")
                .isFalse();
        assertThat(LikePattern.of(".*").matches(".xy*")).isFalse();
        assertThat(LikePattern.of("._").matches(".*")).isTrue();
    }

    @Test
    void anEnvironmentQueuesABoundedNumberOfAsyncQueries() {
        ExecuteSqlQueryRequest slow = ExecuteSqlQueryRequest.newBuilder()
                .setQuery("SELECT sum(range) FROM range(100000000000)")
                .setAsyncOptions(ExecuteSqlAsyncQueryRequestOptions.newBuilder()
                        .setExecutionMode(ExecuteSqlAsyncExecutionMode.EXECUTE_SQL_ASYNC_EXECUTION_MODE_ASYNC))
                .build();
        for (int i = 0; i < SqlQueries.MAX_QUEUED_PER_ENVIRONMENT; i++) {
            assertThat(stub("dev").executeSqlQuery(slow).getQueryId()).isNotEmpty();
        }
        assertThatThrownBy(() -> stub("dev").executeSqlQuery(slow))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED))
                .hasMessageContaining("64 async SQL queries queued or running, the most it may");
        assertThat(stub("staging").executeSqlQuery(slow).getQueryId())
                .as("another environment's queue")
                .isNotEmpty();
    }

    @Test
    void oneEnvironmentsAsyncQueriesLeaveASlotForAnother() {
        // two slots (the default): queries that run for minutes take one of them, never both
        ExecuteSqlQueryRequest.Builder async = ExecuteSqlQueryRequest.newBuilder()
                .setAsyncOptions(ExecuteSqlAsyncQueryRequestOptions.newBuilder()
                        .setExecutionMode(ExecuteSqlAsyncExecutionMode.EXECUTE_SQL_ASYNC_EXECUTION_MODE_ASYNC));
        for (int i = 0; i < 3; i++) {
            stub("dev")
                    .executeSqlQuery(async.setQuery("SELECT sum(range) FROM range(100000000000)")
                            .build());
        }
        String quick = stub("staging")
                .executeSqlQuery(async.setQuery("SELECT 42 AS answer").build())
                .getQueryId();
        Awaitility.await()
                .atMost(Duration.ofSeconds(30))
                .until(() -> stub("staging")
                                .pollSqlQuery(PollSqlQueryRequest.newBuilder()
                                        .setOperationId(quick)
                                        .build())
                                .getResultCase()
                        == PollSqlQueryResponse.ResultCase.RESPONSE);
    }

    @Test
    void anAsyncQueryIsPolledFromRunningToItsResult() {
        ExecuteSqlQueryResponse submitted = stub("dev")
                .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                        .setQuery("SELECT range % 3 AS g, sum(hash(range)) AS h FROM range(20000000) GROUP BY g")
                        .setAsyncOptions(ExecuteSqlAsyncQueryRequestOptions.newBuilder()
                                .setExecutionMode(ExecuteSqlAsyncExecutionMode.EXECUTE_SQL_ASYNC_EXECUTION_MODE_ASYNC)
                                .setResourceGroup("batch"))
                        .build());
        assertThat(submitted.getAsyncPayload().getOperationId()).isEqualTo(submitted.getQueryId());
        assertThat(submitted.getPerformanceSummary()).contains("resource group: batch");
        PollSqlQueryResponse first = stub("dev")
                .pollSqlQuery(PollSqlQueryRequest.newBuilder()
                        .setOperationId(submitted.getQueryId())
                        .build());
        assertThat(first.getResultCase())
                .isIn(PollSqlQueryResponse.ResultCase.PROGRESS, PollSqlQueryResponse.ResultCase.RESPONSE);
        Awaitility.await()
                .atMost(Duration.ofMinutes(2))
                .until(() -> stub("dev")
                                .pollSqlQuery(PollSqlQueryRequest.newBuilder()
                                        .setOperationId(submitted.getQueryId())
                                        .build())
                                .getResultCase()
                        == PollSqlQueryResponse.ResultCase.RESPONSE);
        PollSqlQueryResponse done = stub("dev")
                .pollSqlQuery(PollSqlQueryRequest.newBuilder()
                        .setOperationId(submitted.getQueryId())
                        .build());
        assertThat(done.getResponse().getSignedOutputUris().getUrisList())
                .allSatisfy(
                        uri -> assertThat(uri).startsWith("http://127.0.0.1:").contains("X-Chalk-Signature"));
        assertThat(done.getInfo().hasFinishedAt()).isTrue();
    }

    @Test
    void aJobTheServerStoppedDuringIsFailedSayingSo() throws Exception {
        ExecuteSqlQueryResponse submitted = stub("dev")
                .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                        .setQuery("SELECT sum(hash(range)) FROM range(20000000000)")
                        .setAsyncOptions(ExecuteSqlAsyncQueryRequestOptions.getDefaultInstance())
                        .build());
        Thread.sleep(300);
        restart(tables, SqlOptions.defaults());
        PollSqlQueryResponse poll = stub("dev")
                .pollSqlQuery(PollSqlQueryRequest.newBuilder()
                        .setOperationId(submitted.getQueryId())
                        .build());
        assertThat(poll.getResultCase()).isEqualTo(PollSqlQueryResponse.ResultCase.FAILED);
        assertThat(poll.getFailed().getErrors(0).getMessage()).containsAnyOf("shut down", "canceled");
    }

    @Test
    void aJobACrashedServerWasRunningIsFailedAtTheNextStart() throws Exception {
        channel.shutdownNow();
        server.close();
        // what a killed server leaves: a job recorded as running that nothing runs
        try (Database db = Database.open(dir.resolve("data"))) {
            new SqlJobStore(db)
                    .insert("sql_crashed", "dev", "SELECT 1", Optional.of("batch"), true, "resource group: batch");
        }
        serve(tables, SqlOptions.defaults());
        PollSqlQueryResponse poll = stub("dev")
                .pollSqlQuery(PollSqlQueryRequest.newBuilder()
                        .setOperationId("sql_crashed")
                        .build());
        assertThat(poll.getResultCase()).isEqualTo(PollSqlQueryResponse.ResultCase.FAILED);
        assertThat(poll.getFailed().getErrors(0).getMessage())
                .contains("server restarted")
                .contains("submit it again");
    }

    @Test
    void anInlineResultOverTheLimitSaysToPersist() throws Exception {
        restart(tables, SqlOptions.defaults().withInlineLimitBytes(4096));
        assertThatThrownBy(() -> stub("dev")
                        .executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                                .setQuery("SELECT range, md5(range::VARCHAR) FROM range(100000)")
                                .build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                    assertThat(e.getStatus().getDescription())
                            .contains("persist")
                            .contains("4096");
                });
    }
}
