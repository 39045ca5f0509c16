package ai.chalk.compute.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * What the baselines need from the host: running a bare command and timing it, finding a sandbox's init among this
 * JVM's descendants (to {@code nsenter} it as the runtime does), and the resident memory of a process.
 */
public final class HostProcesses {

    private HostProcesses() {}

    /** Runs {@code command} to its end, its output discarded, and returns how long that took in nanoseconds. */
    public static long time(List<String> command) {
        try {
            long t = System.nanoTime();
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readAllBytes();
            if (p.waitFor() != 0) {
                throw new IllegalStateException(command + " failed: " + new String(out));
            }
            return System.nanoTime() - t;
        } catch (IOException e) {
            throw new IllegalStateException(command + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * A bare bubblewrap sandbox running {@code command}: every namespace, a read-only {@code /usr} with the usual
     * symlinks, its own {@code /proc} and {@code /dev}, plus {@code extraMounts} (bubblewrap options) before those.
     */
    public static List<String> bareBwrap(List<String> extraMounts, String... command) {
        List<String> line = new ArrayList<>(List.of(
                "bwrap",
                "--ro-bind",
                "/usr",
                "/usr",
                "--symlink",
                "usr/bin",
                "/bin",
                "--symlink",
                "usr/lib",
                "/lib",
                "--symlink",
                "usr/lib64",
                "/lib64"));
        line.addAll(extraMounts);
        line.addAll(List.of("--proc", "/proc", "--dev", "/dev", "--unshare-all", "--die-with-parent", "--"));
        line.addAll(List.of(command));
        return List.copyOf(line);
    }

    /**
     * The bare tool's sandbox running {@code true}: {@code bwrap} with every namespace and a read-only {@code /usr}
     * where bubblewrap is installed, else {@code unshare} of the same namespaces (what the local runtime uses then).
     */
    public static BareCommand bareSandboxTrue() {
        if (onPath("bwrap")) {
            return new BareCommand("bare `bwrap ... true`", bareBwrap(List.of(), "true"));
        }
        return new BareCommand(
                "bare `unshare ... true`",
                List.of(
                        "unshare",
                        "--mount",
                        "--uts",
                        "--ipc",
                        "--net",
                        "--pid",
                        "--cgroup",
                        "--fork",
                        "--mount-proc",
                        "--",
                        "true"));
    }

    /** Whether {@code tool} is an executable file in a directory of {@code PATH}. */
    public static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    /** A baseline's command and the name the report gives it. */
    public record BareCommand(String label, List<String> command) {

        /** Runs it and returns how long that took in nanoseconds. */
        public long time() {
            return HostProcesses.time(command);
        }
    }

    /**
     * The newest sandbox init among this JVM's descendants: a process in another pid namespace than this JVM whose
     * parent ({@code bwrap} or {@code unshare}) is in this JVM's. The benchmarks call it with one sandbox alive.
     */
    public static long newestSandboxInit() {
        String ours = namespace(ProcessHandle.current().pid(), "pid").orElseThrow();
        return ProcessHandle.current()
                .descendants()
                .filter(p ->
                        namespace(p.pid(), "pid").filter(ns -> !ns.equals(ours)).isPresent())
                .filter(p -> p.parent()
                        .filter(parent -> namespace(parent.pid(), "pid")
                                .filter(ours::equals)
                                .isPresent())
                        .filter(parent -> List.of("bwrap", "unshare").contains(comm(parent.pid())))
                        .isPresent())
                .max(Comparator.comparing(
                        p -> p.info().startInstant().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder())))
                .orElseThrow(() -> new IllegalStateException("no sandbox init among this JVM's descendants"))
                .pid();
    }

    /**
     * {@code nsenter ... true} into every namespace, the root and working directory of {@code initPid}: what an exec
     * in a sandbox must do at the least.
     */
    public static List<String> nsenterTrue(long initPid) {
        List<String> c = new ArrayList<>(List.of(
                "nsenter",
                "--target",
                Long.toString(initPid),
                "--mount",
                "--uts",
                "--ipc",
                "--net",
                "--pid",
                "--cgroup"));
        if (!namespace(initPid, "user").equals(namespace(ProcessHandle.current().pid(), "user"))) {
            c.add("--user");
        }
        c.addAll(List.of("--root", "--wd", "--", "true"));
        return c;
    }

    /** The resident set of {@code pid} in megabytes (10^6 bytes), from {@code /proc/PID/status}. */
    public static double rssMegabytes(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024 / 1e6;
                }
            }
            throw new IllegalStateException("no VmRSS for process " + pid);
        } catch (IOException e) {
            throw new IllegalStateException("process " + pid + ": " + e.getMessage(), e);
        }
    }

    /** The command line of {@code pid}, its arguments joined by spaces (empty when it is gone). */
    public static String commandLine(long pid) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"))).replace('\0', ' ');
        } catch (IOException e) {
            return "";
        }
    }

    private static String comm(long pid) {
        try {
            return Files.readString(Path.of("/proc", Long.toString(pid), "comm"))
                    .strip();
        } catch (IOException e) {
            return "";
        }
    }

    private static Optional<String> namespace(long pid, String kind) {
        try {
            return Optional.of(Files.readSymbolicLink(Path.of("/proc", Long.toString(pid), "ns", kind))
                    .toString());
        } catch (IOException e) {
            return Optional.empty();
        }
    }
}
