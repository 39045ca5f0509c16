package ai.chalk.compute.autoconfigure.endpoint;

import ai.chalk.compute.autoconfigure.ChalkComputeChannel;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.SandboxInfo;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * {@code /actuator/chalkcompute}: the Chalk Compute server the application uses and the sandboxes
 * that have not terminated. Expose it with
 * {@code management.endpoints.web.exposure.include=health,chalkcompute}.
 */
@Endpoint(id = "chalkcompute")
public class ChalkComputeEndpoint {

    private final SandboxClient client;
    private final ChalkComputeChannel channel;

    /**
     * @param client  the client to list sandboxes with
     * @param channel the channel it uses, to name the server
     */
    public ChalkComputeEndpoint(SandboxClient client, ChalkComputeChannel channel) {
        this.client = Objects.requireNonNull(client, "client");
        this.channel = Objects.requireNonNull(channel, "channel");
    }

    /**
     * The server and its sandboxes; when the server cannot be asked, the reason instead of the sandboxes (an HTTP
     * 200 answer: the endpoint works, the server does not), as the health indicator reports it.
     */
    @ReadOperation
    public ChalkComputeDescriptor chalkCompute() {
        String server = channel.isEmbedded() ? "embedded" : channel.target();
        try {
            List<SandboxDescriptor> sandboxes =
                    client.list().stream().map(SandboxDescriptor::of).toList();
            return new ChalkComputeDescriptor(server, true, sandboxes, null);
        } catch (ChalkComputeException e) {
            // "UNAVAILABLE: connection refused to localhost:50051": what failed and where
            return new ChalkComputeDescriptor(server, false, List.of(), e.getMessage());
        }
    }

    /**
     * What the endpoint shows.
     *
     * @param server    {@code embedded}, or the remote target
     * @param reachable whether the server answered
     * @param sandboxes the sandboxes that have not terminated; empty when the server did not answer
     * @param error     why the server could not be asked, with the gRPC status and the target, or {@code null}
     */
    public record ChalkComputeDescriptor(
            String server,
            boolean reachable,
            List<SandboxDescriptor> sandboxes,
            @Nullable String error) {}

    /**
     * One sandbox.
     *
     * @param id            its id
     * @param name          its name, or {@code null}
     * @param state         its state, for example {@code RUNNING}
     * @param createdAt     when it was created (ISO-8601), or {@code null} when unknown
     * @param statusMessage why it is in its state, or {@code null}
     */
    public record SandboxDescriptor(String id, String name, String state, String createdAt, String statusMessage) {

        static SandboxDescriptor of(SandboxInfo info) {
            return new SandboxDescriptor(
                    info.id(),
                    info.name().orElse(null),
                    info.state(),
                    info.createdAt() == null ? null : info.createdAt().toString(),
                    info.statusMessage().orElse(null));
        }
    }
}
