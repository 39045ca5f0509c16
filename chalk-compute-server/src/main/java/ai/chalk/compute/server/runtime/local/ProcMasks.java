package ai.chalk.compute.server.runtime.local;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * What of a sandbox's fresh {@code /proc} is hidden: Docker's masked paths (its current default {@code maskedPaths}: kernel
 * memory, keys, timers, scheduler and hardware details), and every other top-level entry that only root may read
 * ({@code kpageflags}, {@code kmsg}, {@code slabinfo} ...). A sandbox's root is uid 0 without capabilities, and the
 * owner of a root-only file needs none to read it; these describe the whole host, not the sandbox.
 *
 * @param files files masked with {@code /dev/null}
 * @param dirs  directories masked with an empty read-only directory (see
 *     {@link ai.chalk.compute.server.runtime.local.mount.MountOp.MaskDir})
 */
record ProcMasks(List<String> files, List<String> dirs) {

    /** Docker's default masked paths under /proc. */
    static final List<String> DOCKER = List.of(
            "/proc/asound",
            "/proc/acpi",
            // every CPU's interrupt counts: world-readable, and they time other tenants' keystrokes and traffic
            "/proc/interrupts",
            "/proc/kcore",
            "/proc/keys",
            "/proc/latency_stats",
            "/proc/timer_list",
            "/proc/timer_stats",
            "/proc/sched_debug",
            "/proc/scsi");

    ProcMasks {
        files = List.copyOf(files);
        dirs = List.copyOf(dirs);
    }

    /** Reads the host's {@code /proc} (a sandbox's has the same top-level entries, but for its processes). */
    static ProcMasks ofHost() {
        return of(Path.of("/proc"));
    }

    static ProcMasks of(Path proc) {
        Set<String> files = new TreeSet<>();
        Set<String> dirs = new TreeSet<>();
        for (String m : DOCKER) {
            Path p = proc.resolve(m.substring("/proc/".length()));
            if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                dirs.add(m);
            } else if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                files.add(m);
            }
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(proc)) {
            for (Path p : entries) {
                String name = p.getFileName().toString();
                if (name.chars().allMatch(Character::isDigit) || name.equals("sys") || name.equals("sysrq-trigger")) {
                    continue; // processes; /proc/sys and the trigger are bound read-only instead
                }
                Set<PosixFilePermission> perms;
                try {
                    perms = Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS);
                } catch (IOException | UnsupportedOperationException e) {
                    continue;
                }
                if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)
                        && !perms.contains(PosixFilePermission.OTHERS_READ)) {
                    files.add("/proc/" + name);
                } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)
                        && !perms.contains(PosixFilePermission.OTHERS_EXECUTE)) {
                    dirs.add("/proc/" + name);
                }
            }
        } catch (IOException e) {
            // without a readable /proc only Docker's list applies
        }
        return new ProcMasks(new ArrayList<>(files), new ArrayList<>(dirs));
    }
}
