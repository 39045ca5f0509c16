package ai.chalk.compute.sql;

import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlAsyncExecutionMode;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlAsyncQueryRequestOptions;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlQueryResponse;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlResultPersistenceSettings;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlSyncQueryRequestOptions;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlSyncQueryResponsePayload;
import ai.chalk.compute.proto.protosql.v1.PlanSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.PollSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.PollSqlQueryResponse;
import ai.chalk.compute.proto.protosql.v1.SqlServiceGrpc;
import ai.chalk.compute.sandbox.SandboxClient;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Chalk SQL: queries over your environment's datasets, {@code chalk.datasets.<name>} (the latest completed revision)
 * and {@code chalk.dataset_revisions."<revision id>"}. A query reads datasets and nothing else: SQL that reaches
 * for files, the network, extensions or settings is refused.
 *
 * <pre>{@code
 * try (SQLClient sql = SQLClient.fromEnv()) {
 *     SqlResult result = sql.query("SELECT 1 AS value");
 *     System.out.println(sql.explain("SELECT 1 AS value"));
 *     SqlJob job = sql.submit("SELECT * FROM chalk.datasets.support_examples", "batch");
 *     List<Path> files = job.await(Duration.ofMinutes(10)).download(Path.of("sql-results"));
 * }
 * }</pre>
 *
 * <p>A query is never sent twice by this client: when the connection fails during {@code query} or {@code submit}
 * the exception says so and the query may have run; {@code getJob} is safe to repeat. Refused queries fail with the
 * server's message: {@code InvalidRequestException} for a syntax error (DuckDB's message) or a statement that is not
 * a query, a permission failure for SQL reaching beyond datasets, {@code RESOURCE_EXHAUSTED} for an inline result
 * over the server's limit (use {@code query(sql, true)}).
 */
public final class SQLClient implements AutoCloseable {

    /** Inline results may be as large as the server allows (16 MiB by default) plus their envelope. */
    private static final int MAX_RESPONSE_BYTES = 256 << 20;

    private final SqlServiceGrpc.SqlServiceBlockingStub stub;
    private final @Nullable AutoCloseable owned;
    private final ShardDownloads downloads;
    private volatile boolean closed;

    private SQLClient(Channel channel, @Nullable AutoCloseable owned, Optional<Path> trustCertificates) {
        this.stub = SqlServiceGrpc.newBlockingStub(channel).withMaxInboundMessageSize(MAX_RESPONSE_BYTES);
        this.owned = owned;
        this.downloads = new ShardDownloads(trustCertificates);
    }

    /**
     * Connects with the settings in the process environment, as {@link SandboxClient#fromEnv()} does
     * ({@code CHALK_COMPUTE_TARGET} or {@code CHALK_API_SERVER}, credentials, {@code ~/.chalk.yml}).
     *
     * @return a client owning its connection
     */
    public static SQLClient fromEnv() {
        SandboxClient connection = SandboxClient.fromEnv();
        return new SQLClient(connection.channel(), connection, connection.trustCertificates());
    }

    /**
     * Connects with the given settings.
     *
     * @param settings where and how to connect
     * @return a client owning its channel
     */
    public static SQLClient connect(ConnectionSettings settings) {
        ManagedChannel channel = settings.openChannel();
        return new SQLClient(channel, () -> shutdown(channel), settings.trustCertificates());
    }

    /**
     * Connects to a server embedded in this JVM through gRPC's in-process transport.
     *
     * @param serverName the in-process name the server was started with
     * @return a client owning its channel
     */
    public static SQLClient inProcess(String serverName) {
        ManagedChannel channel = InProcessChannelBuilder.forName(Objects.requireNonNull(serverName, "serverName"))
                .build();
        return new SQLClient(channel, () -> shutdown(channel), Optional.empty());
    }

    /**
     * Uses a channel you manage (the one a {@link SandboxClient} uses, say, with its credentials). Closing the client
     * does not close the channel.
     *
     * @param channel the channel
     * @return a client that does not own the channel
     */
    public static SQLClient forChannel(Channel channel) {
        return new SQLClient(Objects.requireNonNull(channel, "channel"), null, Optional.empty());
    }

    /**
     * Uses {@code client}'s connection and credentials, and follows the server's result links with the certificates
     * it trusts. Closing this client does not close the connection.
     *
     * @param client a connected client, such as a {@code SandboxClient}
     * @return a client that does not own the connection
     */
    public static SQLClient of(ai.chalk.compute.connection.ServerChannel client) {
        return new SQLClient(client.channel(), null, client.trustCertificates());
    }

    /**
     * Runs a query and waits for it; the result comes back inline as Parquet.
     *
     * @param sql one query (SELECT, WITH, FROM or VALUES)
     * @return the result
     * @throws ai.chalk.compute.error.ChalkComputeException when the query is refused or fails, with the server's
     *                                                      message
     */
    public SqlResult query(String sql) {
        return query(sql, false);
    }

    /**
     * Runs a query and waits for it.
     *
     * @param sql     one query
     * @param persist keep the result on the server as Parquet shards behind signed links (for results larger than
     *                the inline limit; {@link SqlResult#download} streams them) instead of returning it inline
     * @return the result
     */
    public SqlResult query(String sql, boolean persist) {
        Objects.requireNonNull(sql, "sql");
        ExecuteSqlQueryResponse response = call(() -> stub.executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                .setQuery(sql)
                .setPersistenceSettings(
                        ExecuteSqlResultPersistenceSettings.newBuilder().setEnabled(persist))
                .setSyncOptions(ExecuteSqlSyncQueryRequestOptions.getDefaultInstance())
                .build()));
        return result(response.getQueryId(), response.getPerformanceSummary(), response.getSyncPayload());
    }

    /**
     * DuckDB's plan for a query, without running it.
     *
     * @param sql one query
     * @return the plan as text
     */
    public String explain(String sql) {
        Objects.requireNonNull(sql, "sql");
        return call(() -> stub.planSqlQuery(
                        PlanSqlQueryRequest.newBuilder().setQuery(sql).build()))
                .getLogicalPlan();
    }

    /**
     * Starts a query in the background; its result is persisted. Save {@link SqlJob#queryId()} to resume with
     * {@link #getJob}.
     *
     * @param sql           one query
     * @param resourceGroup the resource group to run in, recorded with the job and shown in its summary; null for
     *                      the default
     * @return the job, running
     */
    public SqlJob submit(String sql, @Nullable String resourceGroup) {
        Objects.requireNonNull(sql, "sql");
        ExecuteSqlAsyncQueryRequestOptions.Builder options = ExecuteSqlAsyncQueryRequestOptions.newBuilder()
                .setExecutionMode(ExecuteSqlAsyncExecutionMode.EXECUTE_SQL_ASYNC_EXECUTION_MODE_ASYNC);
        if (resourceGroup != null) {
            options.setResourceGroup(resourceGroup);
        }
        ExecuteSqlQueryResponse response = call(() -> stub.executeSqlQuery(ExecuteSqlQueryRequest.newBuilder()
                .setQuery(sql)
                .setPersistenceSettings(
                        ExecuteSqlResultPersistenceSettings.newBuilder().setEnabled(true))
                .setAsyncOptions(options)
                .build()));
        return new SqlJob(this, response.getQueryId(), SqlJobStatus.RUNNING, Optional.empty(), Optional.empty());
    }

    /** {@link #submit(String, String)} in the default resource group. */
    public SqlJob submit(String sql) {
        return submit(sql, null);
    }

    /**
     * The job with this query id, as the server reports it now (any query, sync or async, of your environment).
     *
     * @param queryId the id {@link SqlJob#queryId()} or {@link SqlResult#queryId()} gave
     * @throws ai.chalk.compute.error.SqlQueryNotFoundException when the server knows no such query
     */
    public SqlJob getJob(String queryId) {
        Objects.requireNonNull(queryId, "queryId");
        PollSqlQueryResponse poll = ServerCall.run(
                ResourceKind.SQL_QUERY,
                () -> stub.pollSqlQuery(
                        PollSqlQueryRequest.newBuilder().setOperationId(queryId).build()));
        return switch (poll.getResultCase()) {
            case RESPONSE ->
                new SqlJob(
                        this,
                        queryId,
                        SqlJobStatus.SUCCEEDED,
                        Optional.of(result(queryId, "", poll.getResponse())),
                        Optional.empty());
            case FAILED ->
                new SqlJob(
                        this,
                        queryId,
                        SqlJobStatus.FAILED,
                        Optional.empty(),
                        Optional.of(poll.getFailed().getErrorsList().stream()
                                .map(e -> e.getMessage())
                                .reduce((a, b) -> a + "; " + b)
                                .orElse("the query failed")));
            default -> new SqlJob(this, queryId, SqlJobStatus.RUNNING, Optional.empty(), Optional.empty());
        };
    }

    private SqlResult result(String queryId, String summary, ExecuteSqlSyncQueryResponsePayload payload) {
        if (payload.hasSignedOutputUris()) {
            return new SqlResult(
                    this, queryId, summary, null, payload.getSignedOutputUris().getUrisList());
        }
        return new SqlResult(
                this, queryId, summary, payload.getParquetResponse().toByteArray(), List.of());
    }

    ShardDownloads downloads() {
        return downloads;
    }

    private <T> T call(java.util.function.Supplier<T> call) {
        if (closed) {
            throw new IllegalStateException("the SQLClient is closed");
        }
        return ServerCall.run(ResourceKind.SQL_QUERY, call);
    }

    private static void shutdown(ManagedChannel channel) throws InterruptedException {
        channel.shutdown();
        if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
            channel.shutdownNow();
        }
    }

    /** Closes the connection, if the client owns it. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (owned != null) {
            try {
                owned.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                throw new IllegalStateException("closing the SQL client's connection failed: " + e.getMessage(), e);
            }
        }
    }
}
