package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** Reads a kernel setting under {@code /proc/sys} that holds one number. */
public final class Sysctl {

    private Sysctl() {}

    /**
     * The number in {@code file}, if it can be read. Line by line, not with {@code Files.readString}: seeing size 0,
     * that reads one byte, then reads on, and a sysctl file answers a read at a non-zero offset with end-of-file (pid_max
     * read "3" instead of "32768").
     */
    public static Optional<Long> read(Path file) {
        try {
            return Optional.of(Long.parseLong(Files.readAllLines(file).get(0).trim()));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }
}
