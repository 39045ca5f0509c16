package ai.chalk.compute.autoconfigure.endpoint;

import ai.chalk.compute.autoconfigure.ChalkComputeChannel;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.SandboxInfo;
import java.util.List;
import java.util.Objects;
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

    /** The server and its sandboxes. */
    @ReadOperation
    public ChalkComputeDescriptor chalkCompute() {
        List<SandboxDescriptor> sandboxes =
                client.list().stream().map(SandboxDescriptor::of).toList();
        return new ChalkComputeDescriptor(channel.isEmbedded() ? "embedded" : channel.target(), sandboxes);
    }

    /**
     * What the endpoint shows.
     *
     * @param server    {@code embedded}, or the remote target
     * @param sandboxes the sandboxes that have not terminated
     */
    public record ChalkComputeDescriptor(String server, List<SandboxDescriptor> sandboxes) {}

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
