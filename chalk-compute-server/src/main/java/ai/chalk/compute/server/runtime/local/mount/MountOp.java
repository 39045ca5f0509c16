package ai.chalk.compute.server.runtime.local.mount;

import ai.chalk.compute.server.runtime.host.SandboxDevices;
import java.nio.file.Path;

/**
 * One step of setting up a sandbox's file system, at a path inside the sandbox ({@link #target}), in the spirit of
 * bubblewrap's {@code SetupOp}. Each tool performs it its own way ({@link BubblewrapMounts}, {@link UnshareMounts}),
 * with the same effect.
 */
public sealed interface MountOp {

    /** The absolute path inside the sandbox this operation mounts on or creates. */
    String target();

    /** Whether this operation mounts something (and so could hide what an earlier one put below it). */
    default boolean mounts() {
        return true;
    }

    /** The sandbox's root: its writable layer (or an image's root) bound at {@code /}; always the first operation. */
    record Root(Path layer) implements MountOp {
        @Override
        public String target() {
            return "/";
        }
    }

    /** A caller's directory (a volume, a function's code): the only operation whose target a caller chooses. */
    record Volume(Path source, String target, boolean readOnly) implements MountOp {}

    /** A directory of the host's system (such as {@code /usr}), read-only at its own path. */
    record SystemDir(String target) implements MountOp {}

    /** A host file or directory of the runtime's (its helpers, the resolver file), read-only at {@code target}. */
    record ReadOnlyBind(Path source, String target) implements MountOp {}

    /**
     * A directory of the root bound onto itself: a mount point can be neither renamed nor replaced, so what the
     * runtime mounts below it stays where the runtime's privileged helpers look.
     */
    record SelfBind(String target) implements MountOp {}

    /** A file hidden behind a read-only {@code /dev/null}. */
    record MaskFile(String target) implements MountOp {}

    /**
     * A directory hidden behind an empty read-only directory of the given mode.
     *
     * @param empty an empty directory of that mode in the sandbox's state directory, for bubblewrap to bind read-only:
     *     a tmpfs per mask would be one more file system per sandbox for the kernel to visit at every cgroup's
     *     removal; the unshare init mounts a tmpfs
     */
    record MaskDir(String target, int mode, Path empty) implements MountOp {}

    /** A fresh {@code /proc} of the sandbox's pid namespace ({@code nosuid,nodev,noexec}). */
    record Proc(String target) implements MountOp {}

    /**
     * An entry of {@code /proc} made read-only: uid 0 may write root-owned files there without any capability
     * ({@code core_pattern} would run a program as root on the host).
     *
     * @param optional whether the kernel may lack it (then nothing is mounted)
     */
    record ProcReadOnly(String target, boolean optional) implements MountOp {}

    /**
     * A fresh {@code /dev}: an empty directory (a tmpfs for the unshare init) with a private {@code devpts} of at most
     * {@link SandboxDevices#PTYS} terminals, {@code shm} and the standard links. Bubblewrap is given each part rather
     * than its {@code --dev}, which would also bind the host's nodes and mount a devpts, each covered by the sandbox's
     * own: work at every start, and one file system more per sandbox.
     *
     * @param dir an empty directory in the sandbox's state directory, for bubblewrap to bind at {@code target} (a tmpfs
     *     would be one more file system per sandbox); the unshare init mounts a tmpfs
     * @param ptys where the runtime mounted the sandbox's {@code devpts} on the host, for bubblewrap to bind at
     *     {@code pts} (its own {@code --dev} has no limit); the unshare init mounts its own
     * @param shm a directory on the sandbox's own quota file system, beside its layer, for bubblewrap to bind at
     *     {@code shm}, so that what is made there counts against the layer's bytes and files: bubblewrap's
     *     {@code --dev} makes a {@code shm} with no limit on its files, and takes no mount options; the unshare init
     *     mounts a tmpfs with one
     * @param owner who owns {@code /dev} and the {@link DeviceNode}s in it: 0, or
     *     {@link SandboxDevices#OVERFLOW_ID} where the sandbox's root is the host's root; bubblewrap binds what the
     *     runtime made with this owner, the unshare init gives it what it makes
     */
    record Dev(String target, Path dir, Path ptys, Path shm, int owner) implements MountOp {}

    /**
     * A device node of the sandbox's own: bubblewrap binds the node the runtime made for the sandbox ({@code hostNode})
     * onto a file it creates in the {@link Dev} directory, the unshare init (root in a fresh tmpfs) makes its own with
     * the same numbers.
     */
    record DeviceNode(String target, Path hostNode, int major, int minor) implements MountOp {}

    /** A directory created (if missing) with the given mode, such as {@code /tmp}. */
    record Dir(String target, int mode) implements MountOp {
        @Override
        public boolean mounts() {
            return false;
        }
    }

    /** The sandbox's working directory, created if missing; always the last operation. */
    record WorkDir(String target) implements MountOp {
        @Override
        public boolean mounts() {
            return false;
        }
    }
}
