package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host's table of open files ({@code fs.file-max}), which every process shares: once it is full, no process
 * without {@code CAP_SYS_ADMIN} can open a file, and no sandbox has that capability. Below its maximum, one sandbox
 * (1,024 processes of 16,384 files each) filled it (2,466,093 files on a 23 GB host) and every other sandbox stopped.
 * At its maximum, as systemd sets it at boot, a sandbox's open files are bounded by its memory limit instead: the
 * kernel charges each to the memory cgroup of the process that opens it.
 */
public final class FileTable {

    private static final Logger log = LoggerFactory.getLogger(FileTable.class);

    /** Where the kernel keeps the limit. */
    static final Path FILE_MAX = Path.of("/proc/sys/fs/file-max");

    private FileTable() {}

    /**
     * Raises {@code fs.file-max} to its maximum when it is lower, so that the sandboxes' memory limits bound their
     * open files; says why in the log, or, when the host does not let the server change it, what to do.
     */
    public static void leaveToMemoryLimits() {
        Optional<Long> now = Sysctl.read(FILE_MAX);
        if (now.isEmpty() || now.get() == Long.MAX_VALUE) {
            return;
        }
        if (kernelMemoryUncharged()) {
            log.warn(
                    "fs.file-max is {} and kernel memory is not charged to memory cgroups here (cgroup.memory=nokmem):"
                            + " one sandbox can open every file the host's table holds, after which no other sandbox"
                            + " can open one",
                    now.get());
            return;
        }
        try {
            Files.writeString(FILE_MAX, Long.toString(Long.MAX_VALUE), StandardCharsets.US_ASCII);
            log.info(
                    "Raised fs.file-max from {} to its maximum, as systemd does at boot: one sandbox could open every"
                            + " file the host's table holds, after which no other sandbox could open one; each"
                            + " sandbox's open files are bounded by its memory limit now",
                    now.get());
        } catch (IOException e) {
            log.warn(
                    "fs.file-max is {} and the server cannot raise it ({}): one sandbox can open every file the host's"
                            + " table holds, after which no other sandbox can open one. Raise it on the host, as"
                            + " systemd does: sysctl -w fs.file-max={}",
                    now.get(),
                    e.toString(),
                    Long.MAX_VALUE);
        }
    }

    /** Whether the kernel was told not to charge its own memory (open files among it) to memory cgroups. */
    private static boolean kernelMemoryUncharged() {
        try {
            return Files.readString(Path.of("/proc/cmdline")).contains("cgroup.memory=nokmem");
        } catch (IOException e) {
            return false;
        }
    }
}
