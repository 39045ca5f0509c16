package ai.chalk.compute.server.runtime.local.mount;

import ai.chalk.compute.server.error.ComputeException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Every mount of one sandbox, in the order they are made: built once when the sandbox starts, checked once here,
 * and rendered for whichever tool sets the sandbox up ({@link BubblewrapMounts}, {@link UnshareMounts}).
 *
 * <p>The runtime's privileged steps (the unshare init, {@code nsenter --root} and the helpers it runs) resolve
 * names through the paths the runtime mounts, so a volume that covered one would put the caller's files where the
 * runtime runs code with capabilities. A volume may therefore be neither at, inside nor above a path the runtime
 * mounts or {@linkplain Builder#reserve reserves}, nor overlap another volume; this holds for every volume a runtime
 * is asked for, whatever layer above checked it first.
 */
public final class MountPlan {

    private final List<MountOp> ops;

    private MountPlan(List<MountOp> ops) {
        this.ops = List.copyOf(ops);
    }

    /** A plan with {@code root} as its first operation. */
    public static Builder builder(Path root) {
        return new Builder(root);
    }

    /** The operations, in the order they are performed. */
    public List<MountOp> ops() {
        return ops;
    }

    /** The root operation (the first). */
    public MountOp.Root root() {
        return (MountOp.Root) ops.get(0);
    }

    /** Collects operations in order; {@link #build} checks them. */
    public static final class Builder {

        private final List<MountOp> ops = new ArrayList<>();
        private final List<String> reserved = new ArrayList<>();

        private Builder(Path root) {
            ops.add(new MountOp.Root(root));
        }

        /** Appends {@code op}. */
        public Builder add(MountOp op) {
            ops.add(op);
            return this;
        }

        /** Appends each of {@code more}, in order. */
        public Builder addAll(List<? extends MountOp> more) {
            ops.addAll(more);
            return this;
        }

        /** Keeps volumes off a path the runtime uses without mounting anything there (the pivot's old root ...). */
        public Builder reserve(String path) {
            reserved.add(path);
            return this;
        }

        /**
         * The plan, once checked.
         *
         * @throws ComputeException     (invalid) when a volume is not below {@code /}, covers or lies in a path of the
         *                              runtime's, or overlaps another volume
         * @throws IllegalStateException when the runtime's own operations are out of order (a mount made above
         *                              an earlier one would hide it)
         */
        public MountPlan build() {
            List<MountOp> checked = new ArrayList<>();
            for (MountOp op : ops) {
                checked.add(op instanceof MountOp.Volume v ? normalized(v) : op);
            }
            List<String> runtimePaths = new ArrayList<>(reserved);
            checked.stream()
                    .filter(op -> op.mounts() && !(op instanceof MountOp.Volume) && !(op instanceof MountOp.Root))
                    .forEach(op -> runtimePaths.add(op.target()));
            List<MountOp.Volume> volumes = new ArrayList<>();
            for (MountOp op : checked) {
                if (op instanceof MountOp.Volume v) {
                    checkVolume(v, runtimePaths, volumes);
                    volumes.add(v);
                }
            }
            checkOrder(checked);
            return new MountPlan(checked);
        }

        private static MountOp.Volume normalized(MountOp.Volume v) {
            // lexically, as the kernel would resolve it were there no links; a NUL would end the path early
            String at = v.target().isEmpty() || v.target().indexOf('\0') >= 0
                    ? ""
                    : Path.of(v.target()).normalize().toString();
            if (!at.startsWith("/") || at.equals("/")) {
                throw ComputeException.invalid("cannot mount a volume at \"" + v.target() + "\": a mount path must be"
                        + " an absolute path below /, such as /data");
            }
            if (at.contains("=")) {
                throw ComputeException.invalid("cannot mount a volume at " + v.target() + ": a mount path cannot"
                        + " contain '='; choose a plain path such as /data");
            }
            return new MountOp.Volume(v.source(), at, v.readOnly());
        }

        private static void checkVolume(MountOp.Volume v, List<String> runtimePaths, List<MountOp.Volume> earlier) {
            for (String r : runtimePaths) {
                if (covers(v.target(), r) || covers(r, v.target())) {
                    throw ComputeException.invalid("cannot mount a volume at " + v.target() + ": " + r
                            + " is the sandbox runtime's own; mount volumes elsewhere, e.g. /data");
                }
            }
            for (MountOp.Volume e : earlier) {
                if (e.target().equals(v.target())) {
                    throw ComputeException.invalid(
                            "two volumes are mounted at " + v.target() + "; mount each at a path of its own");
                }
                if (covers(e.target(), v.target()) || covers(v.target(), e.target())) {
                    throw ComputeException.invalid("the volumes mounted at " + e.target() + " and " + v.target()
                            + " overlap; mount each at a path of its own, neither inside the other");
                }
            }
        }

        /** A mount must never land on or above what an earlier operation put in place: it would hide it. */
        private static void checkOrder(List<MountOp> ops) {
            for (int j = 1; j < ops.size(); j++) {
                MountOp later = ops.get(j);
                if (later instanceof MountOp.Root) {
                    throw new IllegalStateException("a mount plan has one root, its first operation: " + ops);
                }
                if (!later.mounts()) {
                    continue;
                }
                for (MountOp earlier : ops.subList(1, j)) {
                    if (covers(later.target(), earlier.target())) {
                        throw new IllegalStateException("mount plan out of order: " + later + " would hide " + earlier
                                + "; a parent must be mounted before its children");
                    }
                }
            }
        }
    }

    /** Whether {@code inner} is {@code outer} or lies below it. */
    static boolean covers(String outer, String inner) {
        return inner.equals(outer) || inner.startsWith(outer.endsWith("/") ? outer : outer + "/");
    }

    /** A mode as bubblewrap, chmod and mount options take it: four octal digits, such as {@code 1777}. */
    static String octal(int mode) {
        return String.format("%04o", mode);
    }

    @Override
    public String toString() {
        return "MountPlan" + ops;
    }
}
