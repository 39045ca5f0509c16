package ai.chalk.compute.server.runtime.userns;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The user namespace of one sandbox, mapping its ids 0-65535 to its {@link IdRange}: root inside is an unprivileged id
 * outside, with no capability over the host, its files, its device nodes or its kernel keyring.
 *
 * <p>The namespace is made first, by a holder process ({@code unshare --user sh -c read}) whose maps the server writes.
 * The holder runs as the range's first id, which makes that id the namespace's owner: the kernel counts what the
 * sandbox holds of the limits it keeps per user (inotify instances and watches, processes, namespaces) against its
 * owner too, and with the server's root as the owner, every sandbox and the host's root shared those (one sandbox
 * taking the 128 inotify instances of {@code fs.inotify.max_user_instances} left none to the others or the host).
 * The sandbox's file systems are then id-mapped through it ({@link #attachIdMapped}), and its mounts made by host root
 * as before, in namespaces the host owns; only then does the sandbox's init join it ({@code nsenter --user}, see
 * {@link #path()}), right before it drops its capabilities. So nothing in the sandbox is ever root over a namespace
 * it could mount in, and what it writes lands on disk with plain owners (0 for its root), as an image has them.
 */
public final class UserNamespace implements AutoCloseable {

    /** How long the holder gets to create its namespace. */
    private static final long CREATE_TIMEOUT_MILLIS = 10_000;

    /**
     * The host's util-linux tools that start a holder.
     *
     * @param setpriv changes the holder's ids to the range's first, keeping {@code CAP_SYS_ADMIN} (ambient), which
     *     hosts that refuse user namespaces to unprivileged users (Debian's {@code unprivileged_userns_clone},
     *     Ubuntu's AppArmor) ask of its creator
     * @param unshare creates the namespace
     */
    public record HolderTools(Path setpriv, Path unshare) {

        List<String> command(IdRange range) {
            String id = Long.toString(range.first());
            return List.of(
                    setpriv.toString(),
                    "--reuid=" + id,
                    "--regid=" + id,
                    "--clear-groups",
                    "--inh-caps=-all,+sys_admin",
                    "--ambient-caps=-all,+sys_admin",
                    "--",
                    unshare.toString(),
                    "--user",
                    "--",
                    "/bin/sh",
                    "-c",
                    "read -r _");
        }
    }

    /** How the runtime starts the holder process (a test may watch it). */
    @FunctionalInterface
    public interface Spawner {
        Process start(ProcessBuilder pb) throws IOException;
    }

    private final IdRange range;
    private final Process holder;
    /** The thread that works as the sandbox's root on the host (see {@link #asRoot}): its ids are its own. */
    private final ExecutorService root;

    private UserNamespace(IdRange range, Process holder, ExecutorService root) {
        this.range = range;
        this.holder = holder;
        this.root = root;
    }

    /**
     * Creates the namespace and writes its maps.
     *
     * @param tools the host's tools that start the holder
     * @param root  a single thread that does nothing but {@link #asRoot} work (it changes its own ids), owned by
     *              whoever creates namespaces and shut down with it
     */
    public static UserNamespace create(IdRange range, Spawner spawner, HolderTools tools, ExecutorService root)
            throws IOException {
        // the holder waits on its stdin, which ends when the server does, whatever way it ends
        ProcessBuilder pb = new ProcessBuilder(tools.command(range))
                .directory(new java.io.File("/"))
                .redirectInput(ProcessBuilder.Redirect.PIPE)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.PIPE); // what setpriv or unshare says when they fail
        pb.environment().clear();
        Process holder = spawner.start(pb);
        UserNamespace ns = new UserNamespace(range, holder, root);
        try {
            ns.awaitNamespace();
            // each map in one write, as the kernel requires; gid first, so that the uid map never stands alone
            Path proc = Path.of("/proc", Long.toString(holder.pid()));
            Files.writeString(proc.resolve("gid_map"), range.mapLine(), StandardCharsets.US_ASCII);
            Files.writeString(proc.resolve("uid_map"), range.mapLine(), StandardCharsets.US_ASCII);
        } catch (IOException | RuntimeException e) {
            ns.close();
            throw e;
        }
        return ns;
    }

    /** Waits until the holder has left the server's user namespace (unshare done, sleep running). */
    private void awaitNamespace() throws IOException {
        Path mine = Path.of("/proc/self/ns/user");
        Path its = Path.of("/proc", Long.toString(holder.pid()), "ns", "user");
        String own = Files.readSymbolicLink(mine).toString();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CREATE_TIMEOUT_MILLIS);
        while (true) {
            try {
                if (!Files.readSymbolicLink(its).toString().equals(own)) {
                    return;
                }
            } catch (IOException e) {
                if (!holder.isAlive()) {
                    throw new IOException("cannot create the sandbox's user namespace (" + holderFailure()
                            + "; is user.max_user_namespaces 0?)");
                }
            }
            if (!holder.isAlive()) {
                throw new IOException("cannot create the sandbox's user namespace (" + holderFailure() + ")");
            }
            if (System.nanoTime() > deadline) {
                throw new IOException(
                        "the sandbox's user namespace was not created within " + CREATE_TIMEOUT_MILLIS + " ms");
            }
            Thread.onSpinWait();
            try {
                Thread.sleep(0, 200_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while creating a user namespace", e);
            }
        }
    }

    /** How the holder ended, with what it said (it has ended). */
    private String holderFailure() {
        String said;
        try (var err = holder.getErrorStream()) {
            said = new String(err.readNBytes(1000), StandardCharsets.UTF_8)
                    .strip()
                    .replace('\n', ' ');
        } catch (IOException e) {
            said = "";
        }
        return "setpriv and unshare --user exited with " + holder.exitValue() + (said.isEmpty() ? "" : ": " + said);
    }

    /** The ids the sandbox runs as. */
    public IdRange range() {
        return range;
    }

    /** The namespace's file while the holder lives: open it before {@link #close()} to keep the namespace. */
    public Path path() {
        return Path.of("/proc", Long.toString(holder.pid()), "ns", "user");
    }

    /**
     * Mounts {@code source} again at {@code target} (an existing directory), id-mapped through this namespace: owner
     * 0 on disk shows as the sandbox's root, and what the sandbox's root creates there is stored as owner 0. Only that
     * one mount is cloned, not what is mounted below {@code source}.
     */
    public void attachIdMapped(Path source, Path target) throws IOException {
        IdMapCalls c = IdMapCalls.INSTANCE;
        int userns = -1;
        int tree = -1;
        try {
            userns = c.open(path().toString(), IdMapCalls.O_RDONLY | IdMapCalls.O_CLOEXEC);
            tree = c.open_tree(
                    IdMapCalls.AT_FDCWD, source.toString(), IdMapCalls.OPEN_TREE_CLONE | IdMapCalls.OPEN_TREE_CLOEXEC);
            c.mount_setattr(
                    tree, "", IdMapCalls.AT_EMPTY_PATH, new long[] {IdMapCalls.MOUNT_ATTR_IDMAP, 0, 0, userns}, 32);
            c.move_mount(tree, "", IdMapCalls.AT_FDCWD, target.toString(), IdMapCalls.MOVE_MOUNT_F_EMPTY_PATH);
        } catch (LastErrorException e) {
            throw new IOException("cannot mount " + source + " id-mapped at " + target + " (errno " + e.getErrorCode()
                    + (e.getErrorCode() == 22 ? ": its file system cannot be id-mapped" : "") + ")");
        } finally {
            closeQuietly(tree);
            closeQuietly(userns);
        }
    }

    private static void closeQuietly(int fd) {
        if (fd >= 0) {
            try {
                IdMapCalls.INSTANCE.close(fd);
            } catch (LastErrorException e) {
                // nothing to do
            }
        }
    }

    /**
     * Runs {@code work} as this sandbox's root would reach the host's files: on a thread whose file-system ids are
     * the range's first (capabilities kept), so that what it creates through an id-mapped mount is stored as owner
     * 0, and an overlay it mounts does its own work (copy-ups, its work directory) as that id. Work done as the
     * server's root could create nothing there: id 0 of the host has no place in the mapping.
     */
    public <T> T asRoot(Callable<T> work) throws IOException {
        try {
            return root.submit(() -> {
                        IdMapCalls c = IdMapCalls.INSTANCE;
                        int[] header = {IdMapCalls.CAPABILITY_VERSION_3, 0};
                        int[] caps = new int[6];
                        c.capget(header, caps);
                        c.setfsgid((int) range.first());
                        c.setfsuid((int) range.first());
                        try {
                            // leaving fsuid 0 drops the file capabilities from the effective set: take them back
                            int[] raised = {caps[1], caps[1], caps[2], caps[4], caps[4], caps[5]};
                            c.capset(header, raised);
                            return work.call();
                        } finally {
                            c.setfsuid(0); // back to 0 restores them
                            c.setfsgid(0);
                            c.capset(header, caps);
                        }
                    })
                    .get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            if (e.getCause() instanceof LastErrorException le) {
                throw new IOException("cannot act as the sandbox's root (errno " + le.getErrorCode() + ")");
            }
            throw new IOException(e.getCause().toString(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } catch (RejectedExecutionException e) {
            throw new IOException("cannot act as the sandbox's root: its runtime is shut down", e);
        }
    }

    /**
     * Mounts an overlay at {@code target}, {@code nosuid,nodev}, as the sandbox's root (see {@link #asRoot}): its
     * layers and upper directory id-mapped mounts, so that the overlay's own work (its work directory, copy-ups) is
     * done as an id the mappings know.
     *
     * @param base   the directory the other paths are relative to (named through a descriptor, which keeps the
     *               options short: the kernel takes one page)
     * @param lowers the read-only layers, bottom first
     */
    public void mountOverlay(Path base, List<String> lowers, String upper, String work, Path target)
            throws IOException {
        asRoot(() -> {
            IdMapCalls c = IdMapCalls.INSTANCE;
            int dir = -1;
            try {
                dir = c.open(base.toString(), IdMapCalls.O_RDONLY | IdMapCalls.O_CLOEXEC);
                String at = "/proc/self/fd/" + dir + "/";
                StringBuilder options = new StringBuilder("lowerdir=");
                for (int i = lowers.size() - 1; i >= 0; i--) { // overlayfs lists the top layer first
                    options.append(at).append(lowers.get(i)).append(i > 0 ? ":" : "");
                }
                options.append(",upperdir=")
                        .append(at)
                        .append(upper)
                        .append(",workdir=")
                        .append(at)
                        .append(work);
                if (options.length() > 4000) {
                    throw new IOException("the image has too many layers (" + lowers.size() + ") for one overlay");
                }
                c.mount("chalk-root", target.toString(), "overlay", MS_NOSUID | MS_NODEV, options.toString());
            } catch (LastErrorException e) {
                throw new IOException("cannot mount the sandbox's root overlay (errno " + e.getErrorCode() + ")");
            } finally {
                closeQuietly(dir);
            }
            return null;
        });
    }

    private static final long MS_NOSUID = 2;
    private static final long MS_NODEV = 4;

    /** Ends the holder; the namespace lives on as long as a process or mount of the sandbox uses it. */
    @Override
    public void close() {
        holder.destroyForcibly();
        try {
            holder.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            holder.getErrorStream().close();
        } catch (IOException e) {
            // nothing to release
        }
    }
}
