package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The directory of a runtime's sandboxes as a mount of its own (bound onto itself), so that the layers mounted below
 * it can be detached all at once, with one call, from a copy of the host's mount table: the copy a sandbox's init
 * starts from then holds its own layer only, however many sandboxes run (see the local runtime's
 * {@code SandboxCommands.OWN_MOUNT_TABLE}).
 */
public final class SandboxesMount {

    private static final long MS_BIND = 4096;

    private SandboxesMount() {}

    /** Binds {@code dir} onto itself; undone by {@link LayerQuota#unmount}. */
    public static void bind(Path dir) throws IOException {
        try {
            FileSystemCalls.INSTANCE.mount(dir.toString(), dir.toString(), null, MS_BIND, null);
        } catch (LastErrorException e) {
            throw new IOException("cannot bind " + dir + " onto itself (errno " + e.getErrorCode() + ")");
        }
    }
}
