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
    private static final long MS_PRIVATE = 1 << 18;

    private SandboxesMount() {}

    /**
     * Binds {@code dir} onto itself, private; undone by {@link LayerQuota#unmount}.
     *
     * <p>Private, because a bind takes the propagation of the mount it is made on: on a host whose {@code /} is
     * shared (systemd makes it so), every layer mounted below would be copied to a hidden peer and to every sandbox's
     * mount table, each a slave of the host's (its monitor process holds it for the sandbox's life), so that each
     * start and each terminate touched every sandbox alive and their mounts grew with the square of their number. No
     * sandbox needs a layer mounted after its start: each has its own before it starts.
     */
    public static void bind(Path dir) throws IOException {
        try {
            FileSystemCalls.INSTANCE.mount(dir.toString(), dir.toString(), null, MS_BIND, null);
        } catch (LastErrorException e) {
            throw new IOException("cannot bind " + dir + " onto itself (errno " + e.getErrorCode() + ")");
        }
        try {
            FileSystemCalls.INSTANCE.mount("none", dir.toString(), null, MS_PRIVATE, null);
        } catch (LastErrorException e) {
            throw new IOException("cannot make " + dir + " private (errno " + e.getErrorCode() + ")");
        }
    }
}
