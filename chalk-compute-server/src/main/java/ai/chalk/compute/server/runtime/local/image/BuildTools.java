package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.server.runtime.local.cgroup.CgroupDriver;
import ai.chalk.compute.server.runtime.userns.UserNamespacePool;
import java.nio.file.Path;
import java.util.List;

/**
 * What build commands run with: bubblewrap on the host, and the runtime's helpers (bound read-only at
 * {@code /.chalk} in the build sandbox) of which {@code setpriv} narrows the capability bounding set, which
 * bubblewrap leaves whole when it runs as root.
 *
 * @param bwrap      bubblewrap on the host
 * @param helpersDir the host directory of the helpers
 * @param mount      where the helpers appear inside the build sandbox
 * @param setpriv    the command that runs util-linux setpriv from there
 * @param nsenter    the command that runs the static busybox's nsenter from there: a step joins its user namespace
 *                   with it while it still holds {@code CAP_SYS_ADMIN} on the host, in the image's root, where a
 *                   dynamic program's loader would run the libraries the image lists in {@code /etc/ld.so.preload}
 * @param env        the command that runs the static busybox's env from there, which gives a step its variables
 *                   once it has joined its user namespace
 * @param users      the user namespaces of steps (each runs as an id range of its own, as a sandbox does)
 * @param cgroups    where each step gets cgroups of its own, with the build's limits, as a sandbox does
 * @param proc       the bubblewrap options of a step's {@code /proc}: a sandbox's (fresh, {@code /proc/sys} and its kin
 *                   read-only, the host's details masked)
 */
public record BuildTools(
        Path bwrap,
        Path helpersDir,
        String mount,
        List<String> setpriv,
        List<String> nsenter,
        List<String> env,
        UserNamespacePool users,
        CgroupDriver cgroups,
        List<String> proc) {

    public BuildTools {
        setpriv = List.copyOf(setpriv);
        nsenter = List.copyOf(nsenter);
        env = List.copyOf(env);
        proc = List.copyOf(proc);
    }
}
