package ai.chalk.compute.autoconfigure.health;

import ai.chalk.compute.autoconfigure.ChalkComputeChannel;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.serverinfo.v1.GetServerInfoRequest;
import ai.chalk.compute.proto.serverinfo.v1.GetServerInfoResponse;
import ai.chalk.compute.proto.serverinfo.v1.ServerInfoServiceGrpc;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The health of Chalk Compute, shown as {@code chalkCompute} under {@code /actuator/health}: UP when the server
 * answers within the timeout, DOWN otherwise, with the status and the reason (naming the target and the cause, such
 * as {@code connection refused to localhost:50051}). Details name the server ({@code embedded} or the remote target)
 * and, for the embedded server as for a remote Chalk Compute server, its runtime, the isolation level actually in
 * force and how many sandboxes are in each state (a remote server's own {@code ServerInfoService}; a server without
 * it, such as Chalk's hosted service, is asked for a one-item sandbox listing instead and shows no such details).
 */
public class ChalkComputeHealthIndicator extends AbstractHealthIndicator {

    /** How long the server gets to answer. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(3);

    private final ChalkComputeChannel channel;
    private final Supplier<EmbeddedComputeServer> embedded;
    private final Duration timeout;

    /**
     * @param channel  the channel the application's client uses
     * @param embedded the embedded server, or a supplier of {@code null} when there is none
     * @param timeout  how long the server gets to answer
     */
    public ChalkComputeHealthIndicator(
            ChalkComputeChannel channel, Supplier<EmbeddedComputeServer> embedded, Duration timeout) {
        super("Chalk Compute health check failed");
        this.channel = Objects.requireNonNull(channel, "channel");
        this.embedded = Objects.requireNonNull(embedded, "embedded");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        builder.withDetail("server", channel.isEmbedded() ? "embedded" : channel.target());
        EmbeddedComputeServer server = channel.isEmbedded() ? embedded.get() : null;
        if (server != null) {
            Map<String, Object> details = server.details();
            if (!server.isServing()) {
                builder.down().withDetails(details);
                return;
            }
            builder.withDetails(details);
        }
        try {
            if (server == null && serverInfo(builder)) {
                builder.up();
                return;
            }
            SandboxServiceGrpc.newBlockingStub(channel.channel())
                    .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                    .listSandboxes(ListSandboxesRequest.newBuilder().setLimit(1).build());
            builder.up();
        } catch (StatusRuntimeException e) {
            builder.down()
                    .withDetail("status", e.getStatus().getCode().name())
                    .withDetail("error", String.valueOf(e.getStatus().getDescription()));
        }
    }

    /**
     * Adds a remote server's runtime, isolation and sandbox counts, as the embedded server's details show them.
     *
     * @return {@code false} when the server does not offer them (it answers UNIMPLEMENTED)
     * @throws StatusRuntimeException when the server does not answer
     */
    private boolean serverInfo(Health.Builder builder) {
        GetServerInfoResponse info;
        try {
            info = ServerInfoServiceGrpc.newBlockingStub(channel.channel())
                    .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                    .getServerInfo(GetServerInfoRequest.getDefaultInstance());
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == Status.Code.UNIMPLEMENTED) {
                return false;
            }
            throw e;
        }
        builder.withDetail("runtime", info.getRuntime())
                .withDetail("isolation", info.getIsolation())
                .withDetail("isolationDetail", info.getIsolationDetail())
                .withDetail("sandboxes", new LinkedHashMap<>(info.getSandboxesMap()))
                .withDetail("pooledSandboxes", info.getPooledSandboxes());
        return true;
    }
}
