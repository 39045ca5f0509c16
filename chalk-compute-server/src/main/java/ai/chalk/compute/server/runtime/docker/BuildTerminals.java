package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.host.Sysctl;
import java.io.IOException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The terminals a docker build's steps hold, counted while it runs. The host has one pool of pseudo-terminals
 * ({@code kernel.pty.max} less root's reserve: 3,072 here) for every sandbox and container. A sandbox's container gets
 * a {@code devpts} of its own with a limit ({@link ContainerTerminals}), but the engine's build API takes no mount, so
 * a step opening {@code /dev/ptmx} in a loop held the whole pool for as long as the build ran, and no sandbox got a
 * terminal meanwhile. A build whose steps hold more than {@value SandboxDevices#PTYS} is stopped.
 */
final class BuildTerminals {

    /** How many pseudo-terminals the host has in use, all instances together. */
    private static final Path IN_USE = Path.of("/proc/sys/kernel/pty/nr");
    /** A terminal's other end, as a descriptor's link names it. */
    private static final Pattern OTHER_END = Pattern.compile("/dev/pts/(\\d+)(?: \\(deleted\\))?");

    private BuildTerminals() {}

    /**
     * How many terminals the build's processes hold, counted only when the host has more than {@code limit} in use at
     * all (else no build can hold more, and the count is 0), and only until it is past {@code limit}. A terminal is
     * held through its master ({@code ptmx}, told apart by its {@code tty-index}: a descriptor passed on or duplicated
     * is one terminal) or its other end ({@code /dev/pts/N}, deleted or not: closing the master once the other end is
     * open keeps the terminal).
     */
    static int held(BuildGroup group, int limit) {
        if (Sysctl.read(IN_USE).orElse(0L) <= limit) { // unreadable: not a Linux /proc, nothing to count here
            return 0;
        }
        Set<String> terminals = new HashSet<>();
        for (long pid : group.processes()) {
            Path proc = Path.of("/proc", Long.toString(pid));
            try (DirectoryStream<Path> fds = Files.newDirectoryStream(proc.resolve("fd"))) {
                for (Path fd : fds) {
                    terminal(proc, fd).ifPresent(terminals::add);
                    if (terminals.size() > limit) {
                        return terminals.size();
                    }
                }
            } catch (IOException | DirectoryIteratorException gone) {
                // the process ended since the group was read, or while its descriptors were listed
            }
        }
        return terminals.size();
    }

    /** The terminal descriptor {@code fd} of a process holds, if it is one. */
    private static Optional<String> terminal(Path proc, Path fd) {
        try {
            String target = Files.readSymbolicLink(fd).toString();
            Matcher end = OTHER_END.matcher(target);
            if (end.matches()) {
                return Optional.of(end.group(1));
            }
            if (!target.endsWith("ptmx")) {
                return Optional.empty();
            }
            for (String line : Files.readAllLines(proc.resolve("fdinfo").resolve(fd.getFileName()))) {
                if (line.startsWith("tty-index:")) {
                    return Optional.of(line.substring("tty-index:".length()).strip());
                }
            }
            return Optional.of(proc + "/" + fd.getFileName()); // a kernel without tty-index: each descriptor
        } catch (IOException closed) {
            return Optional.empty(); // closed since the listing
        }
    }

    /** What the build's log and error say when it is stopped for holding {@code held} terminals. */
    static String stopped(int held) {
        return "a step held " + held + " terminals, more than the " + SandboxDevices.PTYS + " a build may (the host has"
                + " one pool of them for every sandbox and container): the build was stopped";
    }
}
