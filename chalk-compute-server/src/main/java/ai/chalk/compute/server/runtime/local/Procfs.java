package ai.chalk.compute.server.runtime.local;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Small readers of {@code /proc}; every method tolerates the process vanishing underneath it. */
final class Procfs {

    static final long SELF = ProcessHandle.current().pid();
    private static final Path PROC = Path.of("/proc");

    private Procfs() {
    }

    /** The innermost pid of a process ({@code NSpid}'s last field), or -1 when it is gone. */
    static long innermostPid(long pid) {
        String status = read(PROC.resolve(Long.toString(pid)).resolve("status"));
        if (status == null) {
            return -1;
        }
        int at = status.indexOf("\nNSpid:");
        if (at < 0) {
            return pid;
        }
        int end = status.indexOf('\n', at + 1);
        String[] fields = status.substring(at + 7, end < 0 ? status.length() : end).trim().split("\\s+");
        return Long.parseLong(fields[fields.length - 1]);
    }

    /** The parent pid, or -1 when the process is gone. */
    static long parentPid(long pid) {
        String stat = read(PROC.resolve(Long.toString(pid)).resolve("stat"));
        if (stat == null) {
            return -1;
        }
        // the command name is in parentheses and may contain anything, so parse after the last ')'
        String[] rest = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(rest[1]);
    }

    /** Whether the process exists and is not a zombie. */
    static boolean running(long pid) {
        String stat = read(PROC.resolve(Long.toString(pid)).resolve("stat"));
        if (stat == null) {
            return false;
        }
        char state = stat.charAt(stat.lastIndexOf(')') + 2);
        return state != 'Z' && state != 'X';
    }

    /** The identity of the process's pid namespace (e.g. {@code pid:[4026532180]}), if it still exists. */
    static Optional<String> pidNamespace(long pid) {
        try {
            return Optional.of(Files.readSymbolicLink(PROC.resolve(Long.toString(pid)).resolve("ns/pid")).toString());
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty();
        }
    }

    /** Every process in the pid namespace {@code namespace}, as host pids, zombies excluded. */
    static List<Long> processesInNamespace(String namespace) {
        List<Long> found = new ArrayList<>();
        for (long pid : allPids()) {
            if (pid != SELF && pidNamespace(pid).filter(namespace::equals).isPresent() && running(pid)) {
                found.add(pid);
            }
        }
        return found;
    }

    static List<Long> allPids() {
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
    static String commandLine(long pid) {
        try {
            byte[] raw = Files.readAllBytes(PROC.resolve(Long.toString(pid)).resolve("cmdline"));
            return new String(raw, StandardCharsets.UTF_8).replace('\0', ' ').trim();
        } catch (IOException e) {
            return "";
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return null;
        }
    }
}
