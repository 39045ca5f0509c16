package ai.chalk.compute.connection;

import io.grpc.Channel;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A connection to a Chalk Compute server as the service clients built on it see it: the channel their calls go
 * through, with its credentials. {@code SandboxClient} is one, so {@code DatasetClient.of(client)} takes it; the
 * service clients depend on this, not on the sandbox package that hands them out.
 */
public interface ServerChannel {

    /**
     * The channel calls go through, authenticated as the connection is.
     *
     * @return the channel
     */
    Channel channel();

    /**
     * The PEM file of certificates this connection trusts (instead of the system's), if it was given one: the
     * server's signed links (dataset files, SQL result shards) are followed trusting them and the system's.
     *
     * @return the file, or empty
     */
    default Optional<Path> trustCertificates() {
        return Optional.empty();
    }
}
