package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** Reads a kernel setting under {@code /proc/sys} that holds a number, or a few. */
public final class Sysctl {

    private Sysctl() {}

    /**
     * The number in {@code file}, if it can be read. Line by line, not with {@code Files.readString}: seeing size 0,
     * that reads one byte, then reads on, and a sysctl file answers a read at a non-zero offset with end-of-file (pid_max
     * read "3" instead of "32768").
     */
    public static Optional<Long> read(Path file) {
        return read(file, 0);
    }

    /** The {@code index}th number (from 0) in {@code file}, if it can be read ({@code net.ipv4.tcp_mem} holds 3). */
    public static Optional<Long> read(Path file, int index) {
        try {
            return Optional.of(
                    Long.parseLong(Files.readAllLines(file).get(0).trim().split("\\s+")[index]));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }
}
