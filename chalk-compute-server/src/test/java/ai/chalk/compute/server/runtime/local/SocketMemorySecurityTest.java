package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.SocketBufferHoard;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.network.TcpMemory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What a sandbox's sockets hold in the kernel counts against the sandbox's memory, not against the host's one pool of
 * TCP memory ({@code net.ipv4.tcp_mem}, shared by every socket of the host, the server's included), in both isolation
 * modes: the buffers of its own sockets, and those of the sockets slirp4netns holds for its connections out, since
 * slirp4netns runs in the sandbox's cgroups with the sandbox's open-file limit.
 */
class SocketMemorySecurityTest {

    static final long MEMORY = 64L << 20;

    @RegisterExtension
    final ModeRuntimes runtimes = new ModeRuntimes();

    /** A sandbox of {@link #MEMORY}, with the whole network or none. */
    private static SandboxSpec limited(boolean network) {
        return new SandboxSpec(
                LocalTesting.newId(),
                "",
                Map.of(),
                "/",
                new ResourceLimits(Optional.empty(), Optional.of(MEMORY)),
                network,
                List.of());
    }

    /**
     * The attack: 200 connections on the sandbox's own loopback, written into and never read. On cgroup v1 the kernel
     * charged their buffers to no group: a 64 MiB sandbox held 600 MB of the host's TCP memory (and with more
     * connections would have taken all of it: 2.2 GB here, after which no socket of the host gets a buffer).
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aSandboxsSocketBuffersCountAgainstItsMemory(String mode) throws Exception {
        LocalRuntime runtime = runtimes.start(mode);
        var sb = runtime.start(limited(false));
        String out = sh(sb, "ip link set lo up 2>/dev/null; " + SocketBufferHoard.HOARD + "200 600000000")
                .ok()
                .out();
        assertThat(SocketBufferHoard.held(out, 200)).as(out).isLessThanOrEqualTo(SocketBufferHoard.bound(MEMORY));
        assertThat(sh(sb, "echo alive").ok().out()).isEqualTo("alive\n");
        sb.terminate(Duration.ZERO);
    }

    /**
     * Within its memory is not enough: a sandbox with the standard 4 GiB could fill the host's whole pool of TCP memory
     * (2.2 GB on this VM). A sandbox holds at most a share of it ({@link TcpMemory#forOneSandbox}: a
     * quarter of half of what the kernel holds before it puts every socket of the host under pressure).
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aSandboxWithTheStandardMemoryHoldsOnlyAShareOfTheHostsTcpMemory(String mode) throws Exception {
        LocalRuntime runtime = runtimes.start(mode);
        var sb = runtime.start(LocalTesting.spec());
        long share = TcpMemory.forOneSandbox(runtime.defaults().memoryBytes());
        assertThat(share).isLessThan(runtime.defaults().memoryBytes());
        String out = sh(sb, "ip link set lo up 2>/dev/null; " + SocketBufferHoard.HOARD + "400 1500000000")
                .ok()
                .out();
        assertThat(SocketBufferHoard.held(out, 400)).as(out).isLessThanOrEqualTo(SocketBufferHoard.bound(share));
        sb.terminate(Duration.ZERO);
    }

    /**
     * slirp4netns carries every connection of a sandbox with network as a socket of its own on the host: it runs in
     * the sandbox's groups (memory, cpu, pids: a group of its own among the sandbox's execs) with the sandbox's
     * open-file limit, so those sockets and its heap are the sandbox's to pay for.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void slirpRunsInTheSandboxsGroupsWithItsOpenFileLimit(String mode) throws Exception {
        LocalRuntime runtime = runtimes.start(mode);
        LocalSandbox sb = (LocalSandbox) runtime.start(limited(true));
        String netns = "/proc/" + sb.initPid() + "/ns/net";
        long slirp = Procfs.allPids().stream()
                .filter(pid -> Procfs.commandLine(pid).contains("slirp4netns")
                        && Procfs.commandLine(pid).contains(netns))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no slirp4netns for " + netns));

        Map<String, String> sandboxGroups = new HashMap<>();
        for (Map.Entry<String, String> e : groups(sb.initPid()).entrySet()) {
            if (e.getValue().contains(sb.id())) { // the hierarchies the runtime puts sandboxes in
                sandboxGroups.put(e.getKey(), e.getValue().replaceFirst("/init$", ""));
            }
        }
        assertThat(sandboxGroups).isNotEmpty();
        Map<String, String> slirpGroups = groups(slirp);
        sandboxGroups.forEach((hierarchy, group) -> assertThat(slirpGroups.get(hierarchy))
                .as("slirp4netns's group in %s", hierarchy)
                .matches(g -> g.equals(group) || g.startsWith(group + "/"), "in " + group));
        String limits = Files.readString(Path.of("/proc", Long.toString(slirp), "limits"));
        int files = runtime.defaults().openFiles();
        assertThat(limits).containsPattern("Max open files\\s+" + files + "\\s+" + files + "\\s");

        // it freezes with the sandbox, and a suspended sandbox still ends whole, slirp4netns with it
        sb.suspend();
        sb.resume();
        assertThat(sh(sb, "echo thawed").ok().out()).isEqualTo("thawed\n");
        assertThat(Procfs.running(slirp)).isTrue();
        sb.suspend();
        sb.terminate(Duration.ZERO);
        assertThat(ProcessHandle.of(slirp).map(ProcessHandle::isAlive)).isNotEqualTo(Optional.of(true));
    }

    /** A process's cgroups, by hierarchy ({@code 4:memory} → its path); none once it has ended. */
    static Map<String, String> groups(long pid) {
        Map<String, String> groups = new HashMap<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "cgroup"))) {
                int last = line.lastIndexOf(':');
                groups.put(line.substring(0, last), line.substring(last + 1));
            }
        } catch (IOException e) {
            return Map.of();
        }
        return groups;
    }
}
