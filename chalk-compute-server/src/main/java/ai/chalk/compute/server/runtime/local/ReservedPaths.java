package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import java.util.ArrayList;
import java.util.List;

/**
 * The paths inside a sandbox that the runtime mounts or creates itself: its helpers ({@value SandboxTools#MOUNT}),
 * {@code /proc}, {@code /dev}, the host's read-only system directories and the masks over their secrets. Privileged
 * steps (the unshare init, {@code nsenter --root} and the helpers it runs) resolve names through these paths, so a
 * binding that covered one would put the caller's files where the runtime runs code with capabilities. A binding
 * may therefore be neither at, inside nor above a reserved path; this holds for every binding a runtime is asked for,
 * whatever layer above checked it first.
 */
final class ReservedPaths {

    /** Reserved in every sandbox. */
    private static final List<String> ALWAYS = List.of("/proc", "/dev", "/sys", SandboxTools.MOUNT, "/.chalk-old-root");

    private final List<String> paths;

    private ReservedPaths(List<String> paths) {
        this.paths = List.copyOf(paths);
    }

    /** The reserved paths of a sandbox on the host's system view, or on an image's root. */
    static ReservedPaths of(boolean fromImage, SandboxFiles.SystemView view) {
        List<String> p = new ArrayList<>(ALWAYS);
        if (fromImage) {
            // /etc is bound onto itself and its preload list masked: the loader of every helper reads it
            p.addAll(List.of("/etc", ImageRoot.PRELOAD));
        } else {
            p.addAll(view.readOnlyDirs());
            p.addAll(view.maskedFiles());
            p.addAll(view.maskedDirs());
        }
        return new ReservedPaths(p);
    }

    /** Refuses bindings at, inside or above a reserved path, and two bindings at one path. */
    void check(List<SandboxSpec.VolumeBinding> bindings) throws RuntimeStartException {
        List<String> seen = new ArrayList<>();
        for (SandboxSpec.VolumeBinding b : bindings) {
            String at = LocalSandbox.normalize(b.mountPath());
            if (!at.startsWith("/") || at.equals("/")) {
                throw new RuntimeStartException("cannot mount " + b.mountPath() + ": a mount path must be an absolute"
                        + " path below /, such as /data");
            }
            for (String r : paths) {
                if (covers(at, r) || covers(r, at)) {
                    throw new RuntimeStartException("cannot mount a volume at " + b.mountPath() + ": " + r
                            + " is the sandbox runtime's own; mount volumes elsewhere, e.g. /data");
                }
            }
            if (seen.contains(at)) {
                throw new RuntimeStartException("two volumes are mounted at " + at);
            }
            seen.add(at);
        }
    }

    /** Whether {@code inner} is {@code outer} or lies below it. */
    private static boolean covers(String outer, String inner) {
        return inner.equals(outer) || inner.startsWith(outer.endsWith("/") ? outer : outer + "/");
    }
}
