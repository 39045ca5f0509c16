package ai.chalk.compute.server.runtime.local.mount;

import java.util.ArrayList;
import java.util.List;

/**
 * A {@link MountPlan} as bubblewrap options, one or a few per operation and in the plan's order. Bubblewrap binds
 * {@code nosuid,nodev} unless told {@code --dev-bind}, and resolves a bind's source on the host.
 */
public final class BubblewrapMounts {

    private BubblewrapMounts() {}

    /** The options that perform {@code plan}. */
    public static List<String> render(MountPlan plan) {
        List<String> a = new ArrayList<>();
        for (MountOp op : plan.ops()) {
            a.addAll(options(plan, op));
        }
        return a;
    }

    /**
     * The options that perform {@code ops} over a root set up otherwise (an image build step's), in their order: none
     * may be a {@link MountOp.SelfBind}, which needs a plan's layer.
     */
    public static List<String> render(List<MountOp> ops) {
        List<String> a = new ArrayList<>();
        for (MountOp op : ops) {
            if (op instanceof MountOp.SelfBind) {
                throw new IllegalArgumentException("a self-bind needs a plan's layer: " + op);
            }
            a.addAll(options(null, op));
        }
        return a;
    }

    private static List<String> options(MountPlan plan, MountOp op) {
        // an if chain: switch patterns over the sealed interface are a preview feature on Java 17
        if (op instanceof MountOp.Root r) {
            return List.of("--bind", r.layer().toString(), "/");
        } else if (op instanceof MountOp.Volume v) {
            return List.of(v.readOnly() ? "--ro-bind" : "--bind", v.source().toString(), v.target());
        } else if (op instanceof MountOp.SystemDir d) {
            return List.of("--ro-bind", d.target(), d.target());
        } else if (op instanceof MountOp.ReadOnlyBind b) {
            return List.of("--ro-bind", b.source().toString(), b.target());
        } else if (op instanceof MountOp.SelfBind s) {
            return List.of(
                    "--bind",
                    plan.root().layer().resolve(s.target().substring(1)).toString(),
                    s.target());
        } else if (op instanceof MountOp.MaskFile m) {
            return List.of("--ro-bind", "/dev/null", m.target());
        } else if (op instanceof MountOp.MaskDir m) {
            return List.of("--ro-bind", m.empty().toString(), m.target());
        } else if (op instanceof MountOp.Proc p) {
            return List.of("--proc", p.target());
        } else if (op instanceof MountOp.ProcReadOnly p) {
            // the host's entry, bound from where bubblewrap finds the host's /proc
            return List.of(p.optional() ? "--ro-bind-try" : "--ro-bind", p.target(), p.target());
        } else if (op instanceof MountOp.Dev d) {
            // what bubblewrap's --dev makes, less the host's nodes (the sandbox's own follow, DeviceNode) and a devpts
            // and
            // a shm without limits (the sandbox's own instead), on a directory of the state directory that holds the
            // links already (SandboxDevices.makeDev), not a tmpfs: a file system fewer
            String dev = d.target();
            return List.of(
                    "--bind",
                    d.dir().toString(),
                    dev,
                    "--dev-bind",
                    d.ptys().toString(),
                    dev + "/pts",
                    "--bind",
                    d.shm().toString(),
                    dev + "/shm");
        } else if (op instanceof MountOp.DeviceNode n) {
            return List.of("--dev-bind", n.hostNode().toString(), n.target());
        } else if (op instanceof MountOp.Dir d) {
            return List.of("--perms", MountPlan.octal(d.mode()), "--dir", d.target());
        } else if (op instanceof MountOp.WorkDir w) {
            return w.target().equals("/") ? List.of() : List.of("--dir", w.target());
        }
        throw new IllegalArgumentException("no bubblewrap option for " + op);
    }
}
