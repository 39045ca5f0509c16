package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.host.Sysctl;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The file work both cgroup versions share: control files written and read, member processes listed, group trees
 * removed, and what all of a runtime's sandboxes may take of the host together.
 */
public final class CgroupFiles {

    private CgroupFiles() {}

    /** Writes a control file (one {@code write(2)}: the kernel takes the value, or refuses it with an error). */
    static void write(Path file, String value) throws IOException {
        Files.writeString(file, value, StandardCharsets.US_ASCII);
    }

    static String read(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.US_ASCII).trim();
    }

    /** The processes in {@code dir}'s group, with those of its sub-groups when {@code recursive}; none once gone. */
    public static List<Long> procs(Path dir, boolean recursive) {
        List<Long> pids = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(dir.resolve("cgroup.procs"), StandardCharsets.US_ASCII)) {
                if (!line.isBlank()) {
                    pids.add(Long.parseLong(line.trim()));
                }
            }
        } catch (IOException e) {
            return pids;
        }
        if (recursive) {
            for (Path child : subGroups(dir)) {
                pids.addAll(procs(child, true));
            }
        }
        return pids;
    }

    /**
     * The groups right below {@code dir}; none once it is gone. The cgroup file system keeps a directory's link count
     * at two plus its sub-directories, so a group without any (most: a memory group has some 30 control files and no
     * sub-group) is known from one stat, not one for each of its entries: with many sandboxes ending at once, those
     * stats were most of a terminate's time, queued on the file system's lock behind the groups being removed.
     */
    static List<Path> subGroups(Path dir) {
        List<Path> groups = new ArrayList<>();
        try {
            if (((Number) Files.getAttribute(dir, "unix:nlink", LinkOption.NOFOLLOW_LINKS)).longValue() <= 2) {
                return groups;
            }
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, Files::isDirectory)) {
                ds.forEach(groups::add);
            }
        } catch (IOException | DirectoryIteratorException e) {
            // gone meanwhile
        }
        return groups;
    }

    /** Removes a group and its sub-groups, deepest first, retrying while exiting tasks still hold them. */
    static void removeTree(Path dir, long timeoutMillis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        for (Path child : subGroups(dir)) {
            removeTree(child, timeoutMillis);
        }
        long pause = 100_000;
        while (true) {
            try {
                rmdir(dir);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    return;
                }
                LockSupport.parkNanos(pause);
                pause = Math.min(pause * 2, 20_000_000);
            }
        }
    }

    static void rmdir(Path dir) throws IOException {
        try {
            Files.delete(dir); // rmdir(2); a cgroup directory's control files are not real files
        } catch (NoSuchFileException e) {
            // already gone
        } catch (FileSystemException e) {
            throw new IOException("cannot remove cgroup " + dir + ": " + e.getReason(), e);
        }
    }

    /** Writes a control file quietly: the group may be gone already. */
    static void writeQuietly(Path file, String value) {
        try {
            write(file, value);
        } catch (IOException e) {
            // gone already
        }
    }

    /** Sandbox ids that have groups under the given bases (a runtime's base group in each hierarchy). */
    static List<String> childNames(Iterable<Path> bases) {
        List<String> ids = new ArrayList<>();
        for (Path dir : bases) {
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, Files::isDirectory)) {
                for (Path p : ds) {
                    String name = p.getFileName().toString();
                    if (!ids.contains(name)) {
                        ids.add(name);
                    }
                }
            } catch (IOException e) {
                // nothing there
            }
        }
        return ids;
    }

    /**
     * The process ids all of a runtime's sandboxes may use together: half the host's (with {@code pid_max} at 32768,
     * eight sandboxes of 4096 processes each took them all, and the host could fork no more).
     */
    static long pidsForAllSandboxes() {
        return Math.max(
                64, Math.min(readLong("/proc/sys/kernel/pid_max"), readLong("/proc/sys/kernel/threads-max")) / 2);
    }

    /**
     * The memory all of a runtime's sandboxes may use together: three quarters of the host's, so that sandboxes at
     * their own limits still leave the server room; -1 when the host's is unknown (no cap then).
     */
    static long memoryForAllSandboxes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemTotal:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024 / 4 * 3;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // no cap then
        }
        return -1;
    }

    private static long readLong(String file) {
        return Sysctl.read(Path.of(file)).orElse(32768L);
    }
}
