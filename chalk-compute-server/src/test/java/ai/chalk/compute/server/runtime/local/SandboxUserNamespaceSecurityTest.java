package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.Sysctl;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.WatchService;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Root of a sandbox is not root of the host, in both isolation modes: each sandbox runs in a user namespace of its own
 * with a range of host ids no other sandbox has, so the kernel treats its root as an unprivileged user everywhere
 * outside (host files, device nodes, other sandboxes), while inside it keeps 65536 ids and what it writes lands on disk
 * with the owners it gave (0 for root).
 */
@Tag("alone")
class SandboxUserNamespaceSecurityTest {

    @RegisterExtension
    final ModeRuntimes runtimes = new ModeRuntimes();

    private final Path temp = runtimes.temp();

    private LocalRuntime runtime(String mode) {
        return runtimes.start(mode);
    }

    /** The host uid a sandbox's root is: the second field of its uid map's only line. */
    private static long hostIdOfRoot(RuntimeSandbox s) throws Exception {
        String map = sh(s, "cat /proc/self/uid_map").ok().out().trim();
        String[] f = map.split("\\s+");
        assertThat(f).as(map).hasSize(3);
        assertThat(f[0]).isEqualTo("0");
        assertThat(f[2]).isEqualTo("65536");
        return Long.parseLong(f[1]);
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void eachSandboxsRootIsAnUnprivilegedHostIdOfItsOwn(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode);
        RuntimeSandbox a = runtime.start(LocalTesting.spec());
        RuntimeSandbox b = runtime.start(LocalTesting.spec());
        assertThat(sh(a, "id -u; id -g").ok().out()).isEqualTo("0\n0\n");
        long rootA = hostIdOfRoot(a);
        long rootB = hostIdOfRoot(b);
        assertThat(rootA).isGreaterThanOrEqualTo(65_536);
        assertThat(Math.abs(rootA - rootB)).as("disjoint ranges").isGreaterThanOrEqualTo(65_536);
        // the very first exec of a new sandbox already enters it as it runs: mapped, not the host's root
        for (int i = 0; i < 5; i++) {
            RuntimeSandbox fresh = runtime.start(LocalTesting.spec());
            assertThat(hostIdOfRoot(fresh)).isGreaterThanOrEqualTo(65_536);
            fresh.terminate(Duration.ZERO);
        }

        // seen from the host, the sandbox's processes run as that id, not as root
        sh(a, "sleep 3171 >/dev/null 2>&1 & echo started");
        long deadline = System.nanoTime() + 5_000_000_000L;
        List<Long> pids = List.of();
        while (pids.isEmpty() && System.nanoTime() < deadline) {
            pids = LocalTesting.hostProcessesRunning("sleep 3171");
            Thread.sleep(20);
        }
        assertThat(pids).isNotEmpty();
        for (long pid : pids) {
            String status = Files.readString(Path.of("/proc", Long.toString(pid), "status"));
            String uids =
                    status.lines().filter(l -> l.startsWith("Uid:")).findFirst().orElseThrow();
            assertThat(uids.split("\\s+")).as(uids).containsOnly("Uid:", Long.toString(rootA));
        }

        // its root has no power over what the host's root owns: the host's own files in its view, its device nodes
        String attempts = sh(
                        a, "stat -c '%u' /usr/bin/env; touch /usr/bin/env 2>&1; chmod 0777 /dev/null 2>&1;" + " true")
                .out();
        assertThat(attempts).startsWith("65534\n"); // nobody: host root has no id in the sandbox
        assertThat(attempts)
                .contains("touch: cannot touch '/usr/bin/env': Permission denied")
                .contains("changing permissions of '/dev/null': Operation not permitted");
        a.terminate(Duration.ZERO);
        b.terminate(Duration.ZERO);
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void whatItsUsersWriteKeepsPlainOwnersOnDisk(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode);
        Path volume = Files.createDirectories(temp.resolve("volume-" + mode));
        RuntimeSandbox s = runtime.start(new SandboxSpec(
                LocalTesting.newId(),
                "",
                Map.of(),
                "/workspace",
                ResourceLimits.NONE,
                false,
                List.of(),
                List.of(new SandboxSpec.VolumeBinding(volume, "/data"))));
        // its root writes in the volume and in its layer: owner 0 on disk, as an image or a snapshot has them
        assertThat(sh(
                                s,
                                "echo r > /data/by-root && mkdir /data/d && echo l > /workspace/in-layer && stat -c %u"
                                        + " /data/d /workspace/in-layer")
                        .ok()
                        .out())
                .isEqualTo("0\n0\n");
        assertThat(Files.getAttribute(volume.resolve("by-root"), "unix:uid", LinkOption.NOFOLLOW_LINKS))
                .isEqualTo(0);
        assertThat(Files.getAttribute(volume.resolve("d"), "unix:gid", LinkOption.NOFOLLOW_LINKS))
                .isEqualTo(0);
        // a file the host's root put there is its root's inside
        Files.writeString(volume.resolve("from-host"), "h");
        assertThat(sh(s, "stat -c %u /data/from-host && echo more >> /data/from-host")
                        .ok()
                        .out())
                .isEqualTo("0\n");
        s.terminate(Duration.ZERO);
    }

    /**
     * The kernel keeps some limits per user (inotify instances, {@code fs.inotify.max_user_instances}, 128 by default)
     * and counts a user namespace's users against its owner too. With the server's root as the owner of every
     * sandbox's namespace, one sandbox holding 128 inotify instances left none to any other sandbox, nor to the host's
     * root (the server's file watches, systemd, Docker). Each namespace's owner is now the sandbox's own host id.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void whatTheKernelLimitsPerUserIsEachSandboxsOwn(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode);
        long max =
                Sysctl.read(Path.of("/proc/sys/fs/inotify/max_user_instances")).orElseThrow();
        String hoard = "my @i; while (@i < 5000) { my $fd = syscall("
                + runtime.syscallFilter().filter().syscallNumber("inotify_init1")
                + ", 0); last if $fd < 0; push @i, $fd } print scalar(@i), \"\\n\"; close STDOUT; sleep 120";
        RuntimeProcess hoarding = runtime.start(LocalTesting.spec())
                .exec(new ProcessSpec("perl", List.of("-e", hoard), Optional.empty(), Map.of(), Optional.empty()));
        String held = new BufferedReader(new InputStreamReader(hoarding.stdout(), StandardCharsets.UTF_8)).readLine();
        assertThat(held).as("inotify instances one sandbox holds").isEqualTo(Long.toString(max));
        RuntimeSandbox other = runtime.start(LocalTesting.spec());
        assertThat(sh(other, "perl -e '" + hoard.replace("sleep 120", "") + "'")
                        .ok()
                        .out())
                .as("inotify instances another sandbox gets meanwhile")
                .isEqualTo(max + "\n");
        try (WatchService hostsOwn = FileSystems.getDefault().newWatchService()) {
            assertThat(hostsOwn).as("the host's root still watches files").isNotNull();
        }
        hoarding.signal(9);
    }

    /**
     * Once a sandbox runs, its id-mapped root lives in its own mount namespace only: the host's mount table, which every
     * later sandbox's start copies and reads, keeps one mount per sandbox (its layer's file system), and what the
     * sandbox writes still lands in its layer with plain owners.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void theHostKeepsOnlyTheLayerMountOfARunningSandbox(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode);
        LocalSandbox s = (LocalSandbox) runtime.start(LocalTesting.spec());
        Path dir = runtime.sandboxesDir().resolve(s.name());
        List<String> mounts = Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .map(l -> l.split(" ")[4])
                .filter(target -> target.startsWith(dir + "/") || target.equals(dir.toString()))
                .toList();
        assertThat(mounts).containsExactly(dir.toString());
        assertThat(sh(s, "echo l > /workspace/in-layer && stat -c %u /workspace/in-layer")
                        .ok()
                        .out())
                .isEqualTo("0\n");
        assertThat(Files.getAttribute(s.layer().resolve("workspace/in-layer"), "unix:uid", LinkOption.NOFOLLOW_LINKS))
                .isEqualTo(0);
        s.terminate(Duration.ZERO);
    }
}
