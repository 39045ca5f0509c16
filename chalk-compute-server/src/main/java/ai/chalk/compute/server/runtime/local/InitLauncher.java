package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.local.LocalRuntime.Level;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import ai.chalk.compute.server.runtime.local.mount.MountPlan;
import ai.chalk.compute.server.runtime.userns.UserNamespace;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Starts the init of an isolated sandbox, one way per isolation level ({@link BubblewrapLauncher},
 * {@link UnshareLauncher}): the long-lived process that holds the sandbox's namespaces, in its cgroups and under its
 * syscall filter, once its root and mounts are in place and it reports ready.
 */
abstract sealed class InitLauncher permits BubblewrapLauncher, UnshareLauncher {

    /** How long an init gets to report ready. */
    static final long READY_TIMEOUT_SECONDS = 30;

    /**
     * What an init is started with.
     *
     * @param runtime   the runtime (tools, filters, defaults)
     * @param groups    its cgroups, if cgroups are in use
     * @param hostname  its host name
     * @param workdir   its working directory
     * @param fromImage whether its root is an image's
     * @param mounts    its mounts, root and volumes as it sees them (id-mapped where it has its own ids)
     * @param userns    its user namespace, if it has its own ids
     * @param dir       its state directory, its layer's mount point
     */
    record Request(
            LocalRuntime runtime,
            SandboxCgroup groups,
            String hostname,
            String workdir,
            boolean fromImage,
            MountPlan mounts,
            Optional<UserNamespace> userns,
            Path dir) {}

    /** The launcher of an isolation level that has an init. */
    static InitLauncher of(Level level) {
        return switch (level) {
            case BUBBLEWRAP -> new BubblewrapLauncher();
            case UNSHARE -> new UnshareLauncher();
            case NONE -> throw new IllegalArgumentException("sandboxes without isolation have no init");
        };
    }

    /** Starts the init and returns once it is ready. */
    abstract SandboxInit launch(Request request) throws RuntimeStartException, IOException;

    /**
     * The init as started: its pid namespace read while it still runs. The server lets go of its stderr: the init
     * closed its own once ready, and a pipe kept per sandbox would be one more descriptor every process the server
     * starts inherits and closes (see {@link BubblewrapLauncher}).
     */
    static SandboxInit started(Process p, long pid, SandboxFilter filter) throws RuntimeStartException {
        try {
            p.getErrorStream().close();
        } catch (IOException e) {
            // closed already: nothing held
        }
        String ns = Procfs.pidNamespace(pid)
                .orElseThrow(() ->
                        new RuntimeStartException("the sandbox's init (pid " + pid + ") ended right after starting"));
        return new SandboxInit(p, pid, ns, filter, null, Optional.empty());
    }

    /**
     * Reads the init's stderr until it reports ready, and returns what it said before (a line each); when it ends
     * first, what it said becomes the error.
     */
    static String awaitReady(LocalRuntime runtime, Process p, BufferedReader err, String tool)
            throws RuntimeStartException, IOException {
        ScheduledFuture<?> watchdog =
                runtime.scheduler().schedule(p::destroyForcibly, READY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        try {
            StringBuilder said = new StringBuilder();
            StringBuilder before = new StringBuilder();
            String line;
            while ((line = err.readLine()) != null) {
                if (line.startsWith(SandboxCommands.READY)) {
                    return before.toString();
                }
                before.append(line).append('\n');
                if (!line.startsWith(SandboxCommands.INIT_PID)) {
                    said.append(said.length() == 0 ? "" : "; ").append(line.trim());
                }
            }
            LocalSandbox.waitQuietly(p, 10);
            String why = said.length() > 0 ? said.toString() : p.isAlive() ? "no output" : "exit code " + p.exitValue();
            throw new RuntimeStartException("the sandbox could not be created (" + tool + "): " + why);
        } finally {
            watchdog.cancel(false);
        }
    }
}
