package ai.chalk.compute.autoconfigure.health;

import ai.chalk.compute.autoconfigure.ChalkComputeChannel;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The health of Chalk Compute, shown as {@code chalkCompute} under {@code /actuator/health}: UP when
 * the server answers a one-item sandbox listing within the timeout, DOWN otherwise. Details name the
 * server ({@code embedded} or the remote target) and, for the embedded server, its runtime, the
 * isolation level actually in force and how many sandboxes are in each state.
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
            if (!server.isRunning()) {
                builder.down().withDetails(details);
                return;
            }
            builder.withDetails(details);
        }
        try {
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
}
