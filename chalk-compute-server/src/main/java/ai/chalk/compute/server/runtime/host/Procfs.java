package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * Readers of the host's {@code /proc}: the local runtime's sandboxes, and the Docker engine's containers when it runs
 * on this host. Every method tolerates the process vanishing underneath it.
 */
public final class Procfs {

    public static final long SELF = ProcessHandle.current().pid();
    private static final Path PROC = Path.of("/proc");

    private Procfs() {}

    /** The innermost pid of a process ({@code NSpid}'s last field), or -1 when it is gone. */
    public static long innermostPid(long pid) {
        String status = read(dir(pid).resolve("status"));
        if (status == null) {
            return -1;
        }
        int at = status.indexOf("\nNSpid:");
        if (at < 0) {
            return pid;
        }
        int end = status.indexOf('\n', at + 1);
        String[] fields =
                status.substring(at + 7, end < 0 ? status.length() : end).trim().split("\\s+");
        return Long.parseLong(fields[fields.length - 1]);
    }

    /** The fields of {@code /proc/<pid>/stat} after the command name (state first), or null when it is gone. */
    private static String[] stat(long pid) {
        String stat = read(dir(pid).resolve("stat"));
        if (stat == null) {
            return null;
        }
        // the command name is in parentheses and may contain anything, so parse after the last ')'
        return stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    }

    /** The parent pid, or -1 when the process is gone. */
    public static long parentPid(long pid) {
        String[] f = stat(pid);
        return f == null ? -1 : Long.parseLong(f[1]);
    }

    /** When the process started (clock ticks after boot), to tell it from a later one with the same pid; -1 if gone. */
    public static long startTime(long pid) {
        String[] f = stat(pid);
        return f == null ? -1 : Long.parseLong(f[19]);
    }

    /**
     * Whether the process exists and is not ending: not a zombie, not exiting, and no SIGKILL waiting for it. A
     * process another one has just SIGKILLed ({@code kill -KILL -1} inside a sandbox, say) still looks like it runs
     * until the kernel schedules it to die; the pending signal tells it apart at once.
     */
    public static boolean running(long pid) {
        return notEnding(stat(pid));
    }

    /** Whether the process that started at {@code startTime} still runs (and not a later one with its pid). */
    public static boolean running(long pid, long startTime) {
        String[] f = stat(pid);
        return notEnding(f) && Long.parseLong(f[19]) == startTime;
    }

    private static final long PF_EXITING = 0x4;
    private static final long SIGKILL_PENDING = 1L << (9 - 1);

    /** {@code f}: fields of a stat line (see {@link #stat}); flags are field 9, thread-pending signals field 31. */
    private static boolean notEnding(String[] f) {
        return f != null
                && !f[0].equals("Z")
                && !f[0].equals("X")
                && (Long.parseUnsignedLong(f[6]) & PF_EXITING) == 0
                && (Long.parseLong(f[28]) & SIGKILL_PENDING) == 0;
    }

    /** The identity of the process's pid namespace (e.g. {@code pid:[4026532180]}), if it still exists. */
    public static Optional<String> pidNamespace(long pid) {
        try {
            return Optional.of(
                    Files.readSymbolicLink(dir(pid).resolve("ns/pid")).toString());
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty();
        }
    }

    /** The process's {@code /proc/<pid>/cgroup}, or empty when it is gone. */
    public static String cgroups(long pid) {
        String s = read(dir(pid).resolve("cgroup"));
        return s == null ? "" : s;
    }

    /** Every process in the pid namespace {@code namespace}, as host pids, zombies excluded. */
    public static List<Long> processesInNamespace(String namespace) {
        return processesInNamespace(namespace, allPids());
    }

    /**
     * Those of {@code candidates} (host pids) in the pid namespace {@code namespace}, zombies excluded: as
     * {@link #processesInNamespace(String)} where every process of the namespace is known to be among them, without a
     * read of every process of the host.
     */
    public static List<Long> processesInNamespace(String namespace, Collection<Long> candidates) {
        List<Long> found = new ArrayList<>();
        for (long pid : candidates) {
            if (pid != SELF && pidNamespace(pid).filter(namespace::equals).isPresent() && running(pid)) {
                found.add(pid);
            }
        }
        return found;
    }

    public static List<Long> allPids() {
        List<Long> pids = new ArrayList<>();
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(PROC)) {
            for (Path p : dir) {
                String name = p.getFileName().toString();
                if (!name.isEmpty() && name.chars().allMatch(Character::isDigit)) {
                    pids.add(Long.parseLong(name));
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc: " + e.getMessage(), e);
        }
        return pids;
    }

    /** The command line of a process, arguments separated by spaces, or empty when it is gone. */
    public static String commandLine(long pid) {
        try {
            byte[] raw = Files.readAllBytes(dir(pid).resolve("cmdline"));
            return new String(raw, StandardCharsets.UTF_8).replace('\0', ' ').trim();
        } catch (IOException e) {
            return "";
        }
    }

    private static Path dir(long pid) {
        return PROC.resolve(Long.toString(pid));
    }

    /** A small kernel file as text, or null when it cannot be read (e.g. its process is gone). */
    public static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return null;
        }
    }
}
