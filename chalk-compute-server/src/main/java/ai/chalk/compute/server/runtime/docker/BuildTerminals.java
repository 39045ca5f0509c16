package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.host.Sysctl;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

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

    private BuildTerminals() {}

    /**
     * How many terminals the build's processes hold (open {@code ptmx} descriptors), counted only when the host has
     * more than {@code limit} in use at all (else no build can hold more, and the count is 0): the count reads every
     * descriptor of every step's process, the check of the host's total one file.
     */
    static int held(BuildGroup group, int limit) {
        if (Sysctl.read(IN_USE).orElse(0L) <= limit) { // unreadable: not a Linux /proc, nothing to count here
            return 0;
        }
        int held = 0;
        for (long pid : group.processes()) {
            try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "fd"))) {
                for (Path fd : fds) {
                    try {
                        if (Files.readSymbolicLink(fd).toString().endsWith("ptmx")) {
                            held++;
                        }
                    } catch (IOException closed) {
                        // closed since the listing
                    }
                }
            } catch (IOException gone) {
                // the process ended since the group was read
            }
        }
        return held;
    }

    /** What the build's log and error say when it is stopped for holding {@code held} terminals. */
    static String stopped(int held) {
        return "a step held " + held + " terminals, more than the " + SandboxDevices.PTYS + " a build may (the host has"
                + " one pool of them for every sandbox and container): the build was stopped";
    }
}
