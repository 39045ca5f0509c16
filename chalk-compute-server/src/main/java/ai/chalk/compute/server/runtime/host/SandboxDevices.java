package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

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

    /**
     * The pseudo-terminals one sandbox may hold at once (its {@code devpts}'s {@code max}): the host has one pool of
     * them for every sandbox and container ({@code kernel.pty.max}), which one sandbox could otherwise take whole.
     */
    public static final int PTYS = 64;

    /**
     * Who owns a sandbox's {@code /dev} and its nodes where the sandbox's root is the host's root (no user namespace
     * of its own): the kernel's overflow id, which the host's root appears as in a sandbox with ids of its own. As
     * their owner, that sandbox's root, even without capabilities, could {@code chmod 000} the nodes every exec opens
     * (each later exec then failed) and make or remove entries of {@code /dev}; now it can do neither, as where it has
     * ids of its own.
     */
    public static final int OVERFLOW_ID = 65534;

    private SandboxDevices() {}

    /**
     * Creates {@code dir} (which must not exist) holding one node of each of {@link #NODES}, mode 0666, owned by
     * {@code owner} ({@link #OVERFLOW_ID} where the sandbox's root is the host's root, else 0).
     */
    public static void create(Path dir, int owner) throws IOException {
        Files.createDirectory(dir);
        for (Node n : NODES) {
            Path node = dir.resolve(n.name());
            try {
                FileSystemCalls.INSTANCE.mknod(
                        node.toString(), FileSystemCalls.S_IFCHR | 0666, makedev(n.major(), n.minor()));
            } catch (LastErrorException e) {
                throw new IOException("cannot create device node " + node + " (errno " + e.getErrorCode() + ")");
            }
            Files.setAttribute(node, "unix:mode", 0666); // whatever the umask
            own(node, owner);
        }
    }

    private static void own(Path path, int owner) throws IOException {
        if (owner != 0) {
            Files.setAttribute(path, "unix:uid", owner, LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(path, "unix:gid", owner, LinkOption.NOFOLLOW_LINKS);
        }
    }

    /**
     * Mounts a {@code devpts} of the sandbox's own at {@code dir} (which it creates), with bubblewrap's options and
     * a {@code max} of {@link #PTYS}, for bubblewrap to bind at {@code /dev/pts} (a devpts of its {@code --dev} would
     * have no limit). The host's mount can go ({@link #unmountPtys}) once the sandbox's init has its own.
     */
    public static void mountPtys(Path dir) throws IOException {
        Files.createDirectory(dir);
        try {
            FileSystemCalls.INSTANCE.mount(
                    "devpts",
                    dir.toString(),
                    "devpts",
                    FileSystemCalls.MS_NOSUID | FileSystemCalls.MS_NOEXEC,
                    "newinstance,ptmxmode=0666,mode=0620,max=" + PTYS);
        } catch (LastErrorException e) {
            throw new IOException("cannot mount the terminals of " + dir + " (errno " + e.getErrorCode() + ")");
        }
    }

    /**
     * As {@link #mountPtys}, then gives the file system's root and its {@code ptmx} to {@code owner} (as
     * {@link #create}): a sandbox's root that owned them could {@code chmod 0} its {@code /dev/pts/ptmx}, and every
     * later exec with a terminal then failed to make one.
     */
    public static void mountPtys(Path dir, int owner) throws IOException {
        mountPtys(dir);
        own(dir, owner);
        own(dir.resolve("ptmx"), owner);
    }

    /**
     * The name, beside {@link #mountPtys}'s directory in a sandbox's state directory (its quota file system), of the
     * directory bubblewrap binds at {@code /dev} ({@link #makeDev}).
     */
    public static final String DEV = "devdir";

    /**
     * Creates {@code dir} (which must not exist), mode 0755, owned by {@code owner} (as {@link #create}), holding the
     * standard {@link #LINKS}: the sandbox's {@code /dev}, where bubblewrap makes the mount points of the nodes,
     * terminals and {@code shm}. A directory on the sandbox's quota file system, not a tmpfs: one file system fewer
     * per sandbox (the kernel visits every file system's caches at each cgroup's removal).
     */
    public static void makeDev(Path dir, int owner) throws IOException {
        Files.createDirectory(dir);
        Files.setAttribute(dir, "unix:mode", 0755); // whatever the umask
        for (var link : LINKS.entrySet()) {
            Files.createSymbolicLink(dir.resolve(link.getKey()), Path.of(link.getValue()));
        }
        own(dir, owner);
    }

    /**
     * The links of a {@code /dev}, by name, with their targets, as bubblewrap's {@code --dev} makes them (but for its
     * {@code core}, to the {@code /proc/kcore} a sandbox does not see): made here rather than by bubblewrap, whose
     * {@code --symlink} fails where one is there already, and which would take an option each.
     */
    public static final java.util.Map<String, String> LINKS = linksInOrder();

    private static java.util.Map<String, String> linksInOrder() {
        java.util.Map<String, String> links = new java.util.LinkedHashMap<>();
        links.put("fd", "/proc/self/fd");
        links.put("stdin", "/proc/self/fd/0");
        links.put("stdout", "/proc/self/fd/1");
        links.put("stderr", "/proc/self/fd/2");
        links.put("ptmx", "pts/ptmx");
        return java.util.Collections.unmodifiableMap(links);
    }

    /**
     * The name, beside {@link #mountPtys}'s directory in a sandbox's state directory (its quota file system), of the
     * directory bubblewrap binds at {@code /dev/shm} ({@link #makeShm}).
     */
    public static final String SHM = "shm";

    /**
     * Creates {@code dir} (which must not exist), mode 1777 as {@code /dev/shm} is, owned by {@code owner} (the
     * sandbox's root outside its user namespace; the server's root without one), on the sandbox's quota file system:
     * what the sandbox makes in its {@code /dev/shm} then counts against its layer's bytes and files, where a
     * {@code shm} of its own would hold files without limit, each a kilobyte of the host kernel's memory.
     */
    public static void makeShm(Path dir, OptionalLong owner) throws IOException {
        Files.createDirectory(dir);
        Files.setAttribute(dir, "unix:mode", 01777); // whatever the umask
        if (owner.isPresent()) {
            Files.setAttribute(dir, "unix:uid", (int) owner.getAsLong(), LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(dir, "unix:gid", (int) owner.getAsLong(), LinkOption.NOFOLLOW_LINKS);
        }
    }

    /**
     * Detaches the host's mount of a sandbox's {@code devpts} ({@link #mountPtys}), which the sandbox keeps: the host's
     * mount table, which every start copies, holds nothing of a running sandbox's but its layer.
     */
    public static void unmountPtys(Path dir) {
        FileSystemCalls.detach(dir);
    }

    /** glibc's {@code makedev}: the major number's low 12 bits at 8, the minor's low 8 bits at 0, the rest above. */
    static long makedev(int major, int minor) {
        long ma = major & 0xffffffffL;
        long mi = minor & 0xffffffffL;
        return ((ma & 0x00000fffL) << 8) | ((ma & 0xfffff000L) << 32) | (mi & 0x000000ffL) | ((mi & 0xffffff00L) << 12);
    }
}
