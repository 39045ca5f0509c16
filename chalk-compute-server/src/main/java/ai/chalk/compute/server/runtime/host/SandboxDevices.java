package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A sandbox's own device nodes ({@code null}, {@code zero}, {@code full}, {@code random}, {@code urandom},
 * {@code tty}), made with {@code mknod} for it alone. Binding the host's nodes instead would let the sandbox's root,
 * their owner, change the host's nodes ({@code chmod 000 /dev/null} breaks every program on the host, and
 * {@code touch} changes their times) without any capability.
 */
public final class SandboxDevices {

    /** The nodes, by name, with their major and minor numbers. */
    public record Node(String name, int major, int minor) {}

    public static final List<Node> NODES = List.of(
            new Node("null", 1, 3),
            new Node("zero", 1, 5),
            new Node("full", 1, 7),
            new Node("random", 1, 8),
            new Node("urandom", 1, 9),
            new Node("tty", 5, 0));

    private SandboxDevices() {}

    /** Creates {@code dir} (which must not exist) holding one node of each of {@link #NODES}, mode 0666. */
    public static void create(Path dir) throws IOException {
        Files.createDirectory(dir);
        for (Node n : NODES) {
            String path = dir.resolve(n.name()).toString();
            try {
                FileSystemCalls.INSTANCE.mknod(path, FileSystemCalls.S_IFCHR | 0666, makedev(n.major(), n.minor()));
                Files.setAttribute(dir.resolve(n.name()), "unix:mode", 0666); // whatever the umask
            } catch (LastErrorException e) {
                throw new IOException("cannot create device node " + path + " (errno " + e.getErrorCode() + ")");
            }
        }
    }

    /** glibc's {@code makedev}: the major number's low 12 bits at 8, the minor's low 8 bits at 0, the rest above. */
    static long makedev(int major, int minor) {
        long ma = major & 0xffffffffL;
        long mi = minor & 0xffffffffL;
        return ((ma & 0x00000fffL) << 8) | ((ma & 0xfffff000L) << 32) | (mi & 0x000000ffL) | ((mi & 0xffffff00L) << 12);
    }
}
