package ai.chalk.compute.server.runtime.userns;

import java.io.IOException;
import java.util.Optional;

/** Where a sandbox or an image build step gets its user namespace (the local runtime hands out the id ranges). */
public interface UserNamespaces {

    /** A new namespace with an id range of its own; empty when this host cannot give one. */
    Optional<UserNamespace> create() throws IOException;

    /** Hands a range back once nothing runs as its ids any more. */
    void release(IdRange range);
}
