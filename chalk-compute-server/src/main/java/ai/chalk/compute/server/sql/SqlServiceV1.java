package ai.chalk.compute.server.sql;

import ai.chalk.compute.proto.common.v1.ChalkError;
import ai.chalk.compute.proto.common.v1.ErrorCode;
import ai.chalk.compute.proto.common.v1.ErrorCodeCategory;
import ai.chalk.compute.proto.protosql.v1.DbCatalogInfo;
import ai.chalk.compute.proto.protosql.v1.DbSchemaInfo;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlAsyncExecutionMode;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlAsyncQueryResponsePayload;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlQueryResponse;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlSyncQueryResponsePayload;
import ai.chalk.compute.proto.protosql.v1.GetDbCatalogsRequest;
import ai.chalk.compute.proto.protosql.v1.GetDbCatalogsResponse;
import ai.chalk.compute.proto.protosql.v1.GetDbSchemasRequest;
import ai.chalk.compute.proto.protosql.v1.GetDbSchemasResponse;
import ai.chalk.compute.proto.protosql.v1.GetOfflineQueryInputsRequest;
import ai.chalk.compute.proto.protosql.v1.GetOfflineQueryInputsResponse;
import ai.chalk.compute.proto.protosql.v1.GetOfflineQueryPreviewRequest;
import ai.chalk.compute.proto.protosql.v1.GetOfflineQueryPreviewResponse;
import ai.chalk.compute.proto.protosql.v1.GetOfflineQueryStatsRequest;
import ai.chalk.compute.proto.protosql.v1.GetOfflineQueryStatsResponse;
import ai.chalk.compute.proto.protosql.v1.GetTablesRequest;
import ai.chalk.compute.proto.protosql.v1.GetTablesResponse;
import ai.chalk.compute.proto.protosql.v1.PlanSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.PlanSqlQueryResponse;
import ai.chalk.compute.proto.protosql.v1.PollSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.PollSqlQueryResponse;
import ai.chalk.compute.proto.protosql.v1.SignedOutputUris;
import ai.chalk.compute.proto.protosql.v1.SqlQueryFailedInfo;
import ai.chalk.compute.proto.protosql.v1.SqlQueryInfo;
import ai.chalk.compute.proto.protosql.v1.SqlQueryProgressInfo;
import ai.chalk.compute.proto.protosql.v1.SqlServiceGrpc;
import ai.chalk.compute.proto.protosql.v1.TableInfo;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.SqlJobStore.SqlJob;
import com.google.protobuf.ByteString;
import com.google.protobuf.Timestamp;
import com.google.protobuf.UnsafeByteOperations;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.Optional;

/**
 * Chalk's {@code chalk.protosql.v1.SqlService}: queries over the caller's environment's datasets, run now (result
 * inline or persisted as links) or in the background (polled), plans, and the catalog. A refused or failed query
 * is a status with DuckDB's message: INVALID_ARGUMENT (syntax, not a query, unknown table), PERMISSION_DENIED (it
 * reached for a file or the network), RESOURCE_EXHAUSTED (too large inline, out of memory), CANCELLED.
 */
public final class SqlServiceV1 extends SqlServiceGrpc.SqlServiceImplBase {

    /**
     * The most bytes of Arrow schemas one GetTables answer holds: a revision's schema may be a MiB, and an environment
     * may hold thousands of revisions, each listed with its schema.
     */
    static final long MAX_TABLE_SCHEMA_BYTES = 16 << 20;

    private final SqlQueries queries;
    private final ResultLinks links;

    public SqlServiceV1(SqlQueries queries, ResultLinks links) {
        this.queries = queries;
        this.links = links;
    }

    @Override
    public void executeSqlQuery(ExecuteSqlQueryRequest req, StreamObserver<ExecuteSqlQueryResponse> out) {
        StatusErrors.unary(
                out,
                () -> sql(() -> {
                    SqlQueries.Request request = new SqlQueries.Request(
                            environment(),
                            sqlOf(req.getQuery()),
                            req.hasAsyncOptions() && req.getAsyncOptions().hasResourceGroup()
                                    ? Optional.of(req.getAsyncOptions().getResourceGroup())
                                    : req.hasSyncOptions()
                                                    && req.getSyncOptions().hasResourceGroup()
                                            ? Optional.of(req.getSyncOptions().getResourceGroup())
                                            : Optional.empty(),
                            req.hasMaxMemoryBytes() ? Optional.of(req.getMaxMemoryBytes()) : Optional.empty(),
                            req.hasAsyncOptions()
                                    || req.getPersistenceSettings().getEnabled());
                    if (req.hasAsyncOptions()) {
                        String id = queries.submit(request);
                        return ExecuteSqlQueryResponse.newBuilder()
                                .setQueryId(id)
                                .setAsyncPayload(ExecuteSqlAsyncQueryResponsePayload.newBuilder()
                                        .setOperationId(id)
                                        .setExecutionMode(
                                                ExecuteSqlAsyncExecutionMode.EXECUTE_SQL_ASYNC_EXECUTION_MODE_ASYNC))
                                .setPerformanceSummary(
                                        queries.find(request.environment(), id).summary())
                                .build();
                    }
                    Context call = Context.current();
                    SqlQueries.Finished finished =
                            queries.runNow(request, cancel -> call.addListener(c -> cancel.run(), Runnable::run));
                    SqlJob job = finished.job();
                    byte[] inline = finished.inline();
                    return ExecuteSqlQueryResponse.newBuilder()
                            .setQueryId(job.id())
                            .setSyncPayload(
                                    inline != null
                                            ? ExecuteSqlSyncQueryResponsePayload.newBuilder()
                                                    .setParquetResponse(ByteString.copyFrom(inline))
                                                    .build()
                                            : payload(job))
                            .setPerformanceSummary(job.summary())
                            .build();
                }));
    }

    @Override
    public void planSqlQuery(PlanSqlQueryRequest req, StreamObserver<PlanSqlQueryResponse> out) {
        StatusErrors.unary(
                out,
                () -> sql(() -> PlanSqlQueryResponse.newBuilder()
                        .setLogicalPlan(queries.engine().explain(environment(), sqlOf(req.getQuery())))
                        .build()));
    }

    @Override
    public void pollSqlQuery(PollSqlQueryRequest req, StreamObserver<PollSqlQueryResponse> out) {
        StatusErrors.unary(out, () -> {
            SqlJob job = queries.find(environment(), req.getOperationId());
            SqlQueryInfo.Builder info =
                    SqlQueryInfo.newBuilder().setOperationId(job.id()).setCreatedAt(timestamp(job.createdAt()));
            job.finishedAt().ifPresent(t -> info.setFinishedAt(timestamp(t)));
            PollSqlQueryResponse.Builder response =
                    PollSqlQueryResponse.newBuilder().setInfo(info);
            switch (job.state()) {
                case RUNNING -> response.setProgress(SqlQueryProgressInfo.getDefaultInstance());
                case SUCCEEDED -> response.setResponse(payload(job));
                case FAILED ->
                    response.setFailed(SqlQueryFailedInfo.newBuilder()
                            .addErrors(ChalkError.newBuilder()
                                    .setCode(
                                            job.error().orElse("").startsWith("canceled")
                                                    ? ErrorCode.ERROR_CODE_CANCELLED
                                                    : ErrorCode.ERROR_CODE_INVALID_QUERY)
                                    .setCategory(ErrorCodeCategory.ERROR_CODE_CATEGORY_REQUEST)
                                    .setMessage(job.error().orElse("the query failed"))));
            }
            return response.build();
        });
    }

    @Override
    public void getDbCatalogs(GetDbCatalogsRequest req, StreamObserver<GetDbCatalogsResponse> out) {
        StatusErrors.unary(
                out,
                () -> GetDbCatalogsResponse.newBuilder()
                        .addCatalogNames(QueryDatabase.CATALOG)
                        .addCatalogs(DbCatalogInfo.newBuilder()
                                .setCatalogName(QueryDatabase.CATALOG)
                                .setCatalogType("datasets")
                                .setDescription("your environment's datasets: chalk.datasets.<name> (latest completed"
                                        + " revision) and chalk.dataset_revisions.\"<revision id>\"")
                                .setBackend("duckdb")
                                .setSupportsDatasourceQuery(false))
                        .build());
    }

    @Override
    public void getDbSchemas(GetDbSchemasRequest req, StreamObserver<GetDbSchemasResponse> out) {
        StatusErrors.unary(out, () -> {
            GetDbSchemasResponse.Builder response = GetDbSchemasResponse.newBuilder();
            if (req.hasCatalog() && !req.getCatalog().equals(QueryDatabase.CATALOG)) {
                return response.build();
            }
            LikePattern filter = LikePattern.of(req.hasDbSchemaFilterPattern() ? req.getDbSchemaFilterPattern() : "%");
            for (String schema : new String[] {QueryDatabase.DATASETS, QueryDatabase.REVISIONS}) {
                if (filter.matches(schema)) {
                    response.addSchemas(DbSchemaInfo.newBuilder()
                            .setCatalogName(QueryDatabase.CATALOG)
                            .setDbSchemaName(schema));
                }
            }
            return response.build();
        });
    }

    @Override
    public void getTables(GetTablesRequest req, StreamObserver<GetTablesResponse> out) {
        StatusErrors.unary(
                out,
                () -> sql(() -> {
                    GetTablesResponse.Builder response = GetTablesResponse.newBuilder();
                    if (req.hasCatalog() && !req.getCatalog().equals(QueryDatabase.CATALOG)) {
                        return response.build();
                    }
                    LikePattern schemas =
                            LikePattern.of(req.hasDbSchemaFilterPattern() ? req.getDbSchemaFilterPattern() : "%");
                    LikePattern tables =
                            LikePattern.of(req.hasTableNameFilterPattern() ? req.getTableNameFilterPattern() : "%");
                    long schemaBytes = 0;
                    for (SqlEngine.TableDescription t : queries.engine().tables(environment())) {
                        if (schemas.matches(t.schema()) && tables.matches(t.table())) {
                            response.addTables(TableInfo.newBuilder()
                                    .setCatalogName(QueryDatabase.CATALOG)
                                    .setDbSchemaName(t.schema())
                                    .setTableName(t.table()));
                            byte[] schema = req.getIncludeSchemas() ? t.arrowSchema() : new byte[0];
                            schemaBytes += schema.length;
                            if (schemaBytes > MAX_TABLE_SCHEMA_BYTES) {
                                throw new SqlFailure(
                                        SqlFailure.Reason.TOO_LARGE,
                                        "the schemas of the tables asked for pass " + (MAX_TABLE_SCHEMA_BYTES >> 20)
                                                + " MiB, the most one answer holds: narrow the tables with"
                                                + " db_schema_filter_pattern or table_name_filter_pattern, or ask"
                                                + " without include_schemas");
                            }
                            if (schema.length > 0) {
                                response.getTablesBuilder(response.getTablesCount() - 1)
                                        .setTableArrowSchema(ByteString.copyFrom(schema));
                            }
                        }
                    }
                    return response.build();
                }));
    }

    @Override
    public void getOfflineQueryInputs(
            GetOfflineQueryInputsRequest req, StreamObserver<GetOfflineQueryInputsResponse> out) {
        out.onError(offlineQueries());
    }

    @Override
    public void getOfflineQueryPreview(
            GetOfflineQueryPreviewRequest req, StreamObserver<GetOfflineQueryPreviewResponse> out) {
        out.onError(offlineQueries());
    }

    @Override
    public void getOfflineQueryStats(
            GetOfflineQueryStatsRequest req, StreamObserver<GetOfflineQueryStatsResponse> out) {
        out.onError(offlineQueries());
    }

    private static RuntimeException offlineQueries() {
        return Status.UNIMPLEMENTED
                .withDescription("this server has no offline queries (they need Chalk's feature engine); query"
                        + " datasets with ExecuteSqlQuery instead")
                .asRuntimeException();
    }

    private ExecuteSqlSyncQueryResponsePayload payload(SqlJob job) {
        if (job.persisted()) {
            return ExecuteSqlSyncQueryResponsePayload.newBuilder()
                    .setSignedOutputUris(SignedOutputUris.newBuilder()
                            .addAllUris(links.links(
                                    job.shards().stream().map(BlobDigest::new).toList())))
                    .build();
        }
        try {
            return ExecuteSqlSyncQueryResponsePayload.newBuilder()
                    // the array read is the answer's alone: wrapped, not copied (a second 16 MiB per poll)
                    .setParquetResponse(UnsafeByteOperations.unsafeWrap(
                            queries.read(job.shards().get(0))))
                    .build();
        } catch (IOException e) {
            throw new UncheckedIOException("reading the result of " + job.id() + " failed", e);
        }
    }

    /** Runs a body whose {@link SqlFailure}s become the statuses this service promises. */
    /** The most characters of SQL a query may have: what a query of more would say is data, uploaded as a dataset. */
    static final int MAX_SQL_CHARS = 1 << 20;

    /** A request's SQL, refused when it is longer than {@link #MAX_SQL_CHARS}. */
    private static String sqlOf(String query) {
        if (query.length() > MAX_SQL_CHARS) {
            throw new SqlFailure(
                    SqlFailure.Reason.INVALID,
                    "query: " + query.length() + " characters of SQL is more than the " + MAX_SQL_CHARS
                            + " this server takes; upload large data as a dataset and query it by name");
        }
        return query;
    }

    private static <T> T sql(java.util.function.Supplier<T> body) {
        try {
            return body.get();
        } catch (SqlFailure e) {
            Status status = switch (e.reason()) {
                case INVALID -> Status.INVALID_ARGUMENT;
                case FORBIDDEN -> Status.PERMISSION_DENIED;
                case TOO_LARGE -> Status.RESOURCE_EXHAUSTED;
                case CANCELED -> Status.CANCELLED;
                case TIMED_OUT -> Status.DEADLINE_EXCEEDED;
                case FAILED -> Status.INTERNAL;
            };
            throw status.withDescription(e.getMessage()).asRuntimeException();
        }
    }

    private static Timestamp timestamp(Instant t) {
        return Timestamp.newBuilder()
                .setSeconds(t.getEpochSecond())
                .setNanos(t.getNano())
                .build();
    }

    private static String environment() {
        return Caller.current().environment();
    }
}
