package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.command;
import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A hostile tenant against the local runtime, in both isolation modes (bubblewrap, and util-linux unshare/nsenter
 * where bubblewrap is missing): covering the runtime's own paths with a volume, changing the host's device nodes,
 * reading what /proc says about the host, filling the disk, and running more sandboxes or files than its share. Each
 * mode also runs as on a kernel that cannot give a sandbox ids of its own ({@link ModeRuntimes#HOST_IDS}), where the
 * sandbox's root is the host's root without capabilities.
 */
class LocalSandboxSecurityTest {

    @RegisterExtension
    final ModeRuntimes runtimes = new ModeRuntimes();

    private final Path temp = runtimes.temp();

    private LocalRuntime runtime(String mode, SandboxDefaults defaults) {
        return runtimes.start(mode, defaults);
    }

    private LocalRuntime runtime(String mode) {
        return runtimes.start(mode);
    }

    private static SandboxSpec withVolume(Path source, String at) {
        return new SandboxSpec(
                LocalTesting.newId(),
                "",
                Map.of(),
                "/workspace",
                ResourceLimits.NONE,
                false,
                List.of(),
                List.of(new SandboxSpec.VolumeBinding(source, at)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aVolumeCannotCoverThePathsTheRuntimeRunsHelpersFrom(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode);
        Path evil = Files.createDirectories(temp.resolve("evil"));
        for (String at : List.of(
                "/.chalk",
                "/.chalk/bin",
                "/usr",
                "/usr/bin",
                "/lib64",
                "/etc",
                "/proc",
                "/dev",
                "/etc/shadow",
                "/.chalk-old-root")) {
            assertThatThrownBy(() -> runtime.start(withVolume(evil, at)))
                    .as(at)
                    .isInstanceOf(ComputeException.class)
                    .hasMessageContaining("runtime's own");
        }
        // a legitimate place still works, and execs keep working with a volume mounted
        RuntimeSandbox ok = runtime.start(withVolume(evil, "/data"));
        assertThat(sh(ok, "echo hi > /data/f && cat /data/f").ok().out()).isEqualTo("hi\n");
        ok.terminate(Duration.ZERO);
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void anExecsVariablesNeverShowOnAHostCommandLine(String mode) throws Exception {
        // every user of the host reads /proc/<pid>/cmdline; a secret passed in an exec's environment must not be there
        // (a terminal exec always takes the direct path, never a spare helper)
        String secret = "s3cret-" + java.util.UUID.randomUUID();
        RuntimeSandbox s = runtime(mode).start(LocalTesting.spec(Map.of("FROM_SANDBOX", secret), ResourceLimits.NONE));
        RuntimeProcess p = s.exec(new ProcessSpec(
                "/bin/sh",
                List.of("-c", "echo \"$FROM_SANDBOX|$FROM_EXEC\"; sleep 3"),
                Optional.empty(),
                Map.of("FROM_EXEC", secret + "-exec", "PERL5OPT", "-Mstrict"),
                Optional.of(new ProcessSpec.TerminalSize(80, 24))));
        List<String> exposed = new java.util.ArrayList<>();
        long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        while (System.nanoTime() < until) {
            try (var procs = Files.list(Path.of("/proc"))) {
                for (Path dir : (Iterable<Path>) procs::iterator) {
                    if (!dir.getFileName().toString().matches("\\d+")) {
                        continue;
                    }
                    try {
                        String cmdline = new String(
                                Files.readAllBytes(dir.resolve("cmdline")), java.nio.charset.StandardCharsets.UTF_8);
                        if (cmdline.contains(secret)) {
                            exposed.add(dir.getFileName() + ": " + cmdline.replace('\0', ' '));
                        }
                    } catch (java.io.IOException gone) {
                        // ended meanwhile
                    }
                }
            }
        }
        String out = new String(p.stdout().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(p.onExit().get(30, java.util.concurrent.TimeUnit.SECONDS).exitCode())
                .hasValue(0);
        assertThat(out).contains(secret + "|" + secret + "-exec");
        assertThat(exposed).isEmpty();
        s.terminate(Duration.ZERO);
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void theHostsDeviceNodesCannotBeChanged(String mode) throws Exception {
        String before = PosixFilePermissions.toString(Files.getPosixFilePermissions(Path.of("/dev/null")));
        long mtime = Files.getLastModifiedTime(Path.of("/dev/full")).toMillis();
        RuntimeSandbox s = runtime(mode).start(LocalTesting.spec());
        sh(s, "chmod 000 /dev/null; chmod 000 /dev/zero; touch -d 2001-01-01 /dev/full; true");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(Path.of("/dev/null"))))
                .isEqualTo(before);
        assertThat(Files.getLastModifiedTime(Path.of("/dev/full")).toMillis()).isEqualTo(mtime);
        // nor could it change its own (owned by the id host root appears as): a /dev/null of mode 000 failed every
        // later exec where the sandbox's root is the host's root and owned them; they still work as devices
        // nor its terminals' file system and ptmx (PtyRelayTest: a terminal can still be made after)
        sh(s, "chmod 0 /dev/pts /dev/pts/ptmx; true");
        assertThat(sh(
                                s,
                                "stat -c '%u:%g %a' /dev/null /dev/zero /dev/pts /dev/pts/ptmx;"
                                        + " echo x > /dev/null && head -c 3 /dev/zero | od -An -tx1")
                        .ok()
                        .out())
                .isEqualTo("65534:65534 666\n65534:65534 666\n65534:65534 755\n65534:65534 666\n 00 00 00\n");
    }

    /**
     * The init's standard streams were the pipes the server reads bubblewrap's status from, open to every process of
     * the sandbox through {@code /proc/1/fd}: filled, with the init then killed, they left bubblewrap blocked writing
     * the exit status, the sandbox running for the server and its init's pid free for another process to get.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void theInitsStandardStreamsAreNotTheSandboxsToWrite(String mode) throws Exception {
        RuntimeSandbox s = runtime(mode).start(LocalTesting.spec());
        LocalTesting.Run fds = sh(
                s,
                "ls /proc/1/fd > /dev/null && echo listed; for f in 0 1 2; do [ -e /proc/1/fd/$f ] && echo open-$f; done; true");
        assertThat(fds.ok().out())
                .as("the init's descriptors are there to see, and none is a standard stream")
                .isEqualTo("listed\n");
        LocalTesting.Run write = sh(s, "echo '{\"exit-code\": 0}' > /proc/1/fd/1 2>/dev/null && echo wrote; echo done");
        assertThat(write.ok().out()).isEqualTo("done\n");
        assertThat(sh(s, "echo still").ok().out()).isEqualTo("still\n");
    }

    /**
     * A command opens its own standard streams by name ({@code > /dev/stderr}, {@code cat /dev/stdin}): the server
     * gives the pipes it made as host root to the sandbox's root, on the direct path (a sandbox's first two execs) and
     * on a spare helper's alike; before, every such open said "Permission denied" in a sandbox with ids of its own.
     * The variable that tells the exec to wait for them never reaches the command.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aCommandOpensItsOwnStandardStreamsByName(String mode) throws Exception {
        LocalSandbox s = (LocalSandbox) runtime(mode).start(LocalTesting.spec());
        String opens = "echo out > /dev/stdout && echo err > /dev/stderr && cat /dev/stdin /dev/fd/0 && echo opened"
                + " && env | grep -c CHALK_PIPES";
        for (int i = 0; i < 4; i++) {
            if (i >= 2) {
                // the second exec started the spares: the next ones take a spare helper's path
                Awaitility.await()
                        .atMost(Duration.ofSeconds(5))
                        .untilAsserted(() -> assertThat(s.readySpareExecs()).isPositive());
            }
            LocalTesting.Run run = sh(s, opens);
            assertThat(run.code()).as("exec %d, which said %s", i, run.err()).isEqualTo(1); // grep found nothing
            assertThat(run.out()).as("exec %d", i).isEqualTo("out\nopened\n0\n");
            assertThat(run.err()).as("exec %d", i).isEqualTo("err\n");
        }
    }

    /**
     * A directory the runtime masks is empty to the sandbox, keeps its mode, is mounted read-only (what holds where the
     * sandbox's root would own it: no user namespace) and takes nothing the sandbox tries to put there, on the host
     * either (bubblewrap binds an empty directory of the sandbox's own state directory, one per mode, over every such
     * mask; the unshare init a tmpfs), nor names a host path for it; {@code /dev} holds the sandbox's own nodes, its
     * terminals, its {@code shm} and the standard links (no {@code core}: {@code /proc/kcore} is masked),
     * {@code nosuid} and {@code nodev} but for the nodes; and a second sandbox finds all of it as the first did.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void maskedDirectoriesStayEmptyForEverySandboxAndDevHasTheStandardEntries(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode);
        Map<String, Integer> masked = new java.util.LinkedHashMap<>();
        runtime.systemView().maskedDirs().forEach(d -> masked.put(d, EmptyDirs.CLOSED));
        runtime.procMasks().dirs().forEach(d -> masked.put(d, EmptyDirs.READABLE));
        assertThat(masked).as("directories this host masks").isNotEmpty();
        RuntimeSandbox first = runtime.start(LocalTesting.spec());
        RuntimeSandbox second = runtime.start(LocalTesting.spec());
        for (var m : masked.entrySet()) {
            String d = m.getKey();
            // mountinfo: the mount's root in its file system (no host path), its options; then the attempts
            String attempts = "stat -c %a " + d + "; awk -v d=" + d
                    + " '$5 == d {split($6, o, \",\"); r = $4 \" \" o[1]} END {print r}' /proc/self/mountinfo; touch "
                    + d + "/planted 2>/dev/null && echo wrote; mkdir " + d + "/x 2>/dev/null && echo made; chmod 777 "
                    + d + " 2>/dev/null && echo changed; mount -t tmpfs t " + d
                    + " 2>/dev/null && echo mounted; ls -A " + d + " 2>/dev/null; echo end";
            String root = mode.startsWith("bubblewrap")
                    ? EmptyDirs.in(Path.of("/"), m.getValue()).toString()
                    : "/";
            String expected = Integer.toOctalString(m.getValue()) + "\n" + root + " ro\nend\n";
            assertThat(sh(first, attempts).ok().out()).as(d).isEqualTo(expected);
            assertThat(sh(second, "ls -A " + d + " 2>/dev/null; echo end").ok().out())
                    .as(d)
                    .isEqualTo("end\n");
        }
        if (mode.startsWith("bubblewrap")) {
            for (RuntimeSandbox s : List.of(first, second)) {
                Path dir = runtime.sandboxesDir().resolve(((LocalSandbox) s).name());
                for (int octal : List.of(EmptyDirs.CLOSED, EmptyDirs.READABLE)) {
                    try (var planted = Files.list(EmptyDirs.in(dir, octal))) {
                        assertThat(planted.toList()).as("on the host").isEmpty();
                    }
                }
            }
        }
        assertThat(sh(first, "cat /proc/self/mountinfo").ok().out())
                .doesNotContain(runtime.stateDir().toString());
        sh(first, "touch /dev/planted 2>/dev/null; rm -f /dev/fd 2>/dev/null; true");
        for (RuntimeSandbox s : List.of(first, second)) {
            assertThat(sh(s, "ls -A /dev | tr '\\n' ' '").ok().out())
                    .isEqualTo("fd full null ptmx pts random shm stderr stdin stdout tty urandom zero ");
        }
        assertThat(sh(
                                second,
                                "for l in fd stdin stdout stderr ptmx; do readlink /dev/$l; done;"
                                        + " echo through-fd | cat /dev/fd/0; echo through-stdin | cat /dev/stdin;"
                                        + " stat -c %a /dev /dev/shm; stat -c %u:%g /dev;"
                                        + " awk '$5 == \"/dev\" {print $6}' /proc/self/mountinfo | tr ',' '\\n' |"
                                        + " grep -x -e nosuid -e nodev")
                        .ok()
                        .out())
                .isEqualTo("/proc/self/fd\n/proc/self/fd/0\n/proc/self/fd/1\n/proc/self/fd/2\npts/ptmx\n"
                        + "through-fd\nthrough-stdin\n755\n1777\n65534:65534\n"
                        + (mode.startsWith("bubblewrap") ? "nosuid\nnodev\n" : "nosuid\n"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void procShowsNothingOfTheHostsKernelMemoryTimersOrPaths(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode);
        RuntimeSandbox s = runtime.start(LocalTesting.spec());
        for (String f : List.of(
                "/proc/kpageflags",
                "/proc/kpagecount",
                "/proc/timer_list",
                "/proc/interrupts",
                "/proc/slabinfo",
                "/proc/kmsg",
                "/proc/vmallocinfo")) {
            if (Files.exists(Path.of(f))) {
                assertThat(sh(s, "head -c 64 " + f + " 2>/dev/null | wc -c")
                                .out()
                                .trim())
                        .as(f)
                        .isEqualTo("0");
            }
        }
        String mountinfo = sh(s, "cat /proc/self/mountinfo").ok().out();
        assertThat(mountinfo)
                .doesNotContain(temp.toString())
                .doesNotContain(runtime.stateDir().toString());
        // a cgroup namespace of its own: no host cgroup path (which names the server's data directory's key)
        assertThat(sh(s, "cat /proc/self/cgroup /proc/1/cgroup").ok().out()).doesNotContain("chalk-compute");
        String init = sh(s, "tr '\\0' ' ' < /proc/1/cmdline").ok().out();
        assertThat(init).doesNotContain(temp.toString()).doesNotMatch("(?s).*\\b[0-9]{3,}\\b.*");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aSandboxFillsItsOwnQuotaNotTheServersDisk(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode, new SandboxDefaults(1L << 30, 8L << 20, 512, 256, 4));
        RuntimeSandbox s = runtime.start(LocalTesting.spec());
        LocalTesting.Run fill = sh(s, "dd if=/dev/zero of=/workspace/fill bs=1M count=64 2>&1; echo code=$?");
        assertThat(fill.out())
                .as(fill.err())
                .contains("No space left on device")
                .doesNotContain("code=0");
        // the other tenant's layer has its own quota, untouched
        RuntimeSandbox other = runtime.start(LocalTesting.spec());
        assertThat(sh(other, "dd if=/dev/zero of=/workspace/f bs=1M count=4 2>/dev/null && echo ok")
                        .out())
                .isEqualTo("ok\n");
        s.terminate(Duration.ZERO);
        other.terminate(Duration.ZERO);
        assertThat(Files.list(runtime.sandboxesDir())).isEmpty();
    }

    /**
     * Empty files cost no byte of a layer's quota but kernel memory each, charged to no sandbox on hosts without kernel
     * memory accounting: a layer's tmpfs allowed half the host's pages in files. Now a layer holds a number of files
     * in proportion to its size (here the least, 16,384, for 8 MiB).
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aSandboxMakesABoundedNumberOfFilesInItsLayer(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode, new SandboxDefaults(1L << 30, 8L << 20, 512, 256, 4));
        RuntimeSandbox s = runtime.start(LocalTesting.spec());
        LocalTesting.Run fill = sh(
                s,
                "mkdir /workspace/many && cd /workspace/many && i=0; while [ $i -lt 17000 ]; do"
                        + " true > f$i 2>/dev/null || break; i=$((i+1)); done; echo made=$i");
        int made = Integer.parseInt(fill.ok().out().strip().substring("made=".length()));
        assertThat(made).isLessThan(16_384).isGreaterThan(16_000);
        assertThat(sh(s, "rm -rf /workspace/many && true > /workspace/again && echo ok")
                        .out())
                .as("files removed give their places back")
                .isEqualTo("ok\n");
        // bubblewrap's --dev makes a /dev/shm without a limit and takes no options: the runtime binds a directory on
        // the layer's file system over it; the unshare init mounts a tmpfs with a limit of its own
        LocalTesting.Run shm = sh(
                s,
                "stat -c mode=%a /dev/shm; cd /dev/shm && i=0; while [ $i -lt 17000 ]; do"
                        + " true > s$i 2>/dev/null || break; i=$((i+1)); done; echo made=$i; rm -f /dev/shm/s*");
        List<String> lines = shm.ok().out().lines().toList();
        assertThat(lines.get(0)).as("/dev/shm's mode").isEqualTo("mode=1777");
        assertThat(Integer.parseInt(lines.get(1).substring("made=".length())))
                .as("files in /dev/shm")
                .isLessThan(16_384)
                .isGreaterThan(16_000);
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void sandboxesGetDefaultLimitsAndTheirNumberIsCapped(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode, new SandboxDefaults(256L << 20, 64L << 20, 64, 128, 2));
        RuntimeSandbox a = runtime.start(LocalTesting.spec());
        RuntimeSandbox b = runtime.start(LocalTesting.spec());
        assertThatThrownBy(() -> runtime.start(LocalTesting.spec()))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("at most 2 sandboxes");
        assertThat(sh(a, "ulimit -n; ulimit -Hn").ok().out()).isEqualTo("128\n128\n");
        Optional<SandboxCgroup> groups = ((LocalSandbox) a).groups();
        if (runtime.cgroups().has("memory")) {
            assertThat(groups.orElseThrow().dir("memory").map(d -> read(d.resolve("memory.limit_in_bytes"))))
                    .contains(Long.toString(256L << 20));
        }
        // all sandboxes together: at most half the host's process ids (Files.readString reads "3" of "32768" here)
        if (runtime.cgroups().has("pids")) {
            Path base = groups.orElseThrow().dir("pids").orElseThrow().getParent();
            long hostPids = Math.min(
                    Long.parseLong(Files.readAllLines(Path.of("/proc/sys/kernel/pid_max"))
                            .get(0)),
                    Long.parseLong(Files.readAllLines(Path.of("/proc/sys/kernel/threads-max"))
                            .get(0)));
            assertThat(read(base.resolve("pids.max"))).isEqualTo(Long.toString(hostPids / 2));
        }
        // a fork bomb stops at the sandbox's process limit, and the other sandbox still runs commands
        LocalTesting.Run bomb = sh(
                a, "i=0; while [ $i -lt 200 ]; do sleep 30 >/dev/null 2>&1 & i=$((i+1)); done;" + " echo started=$i");
        assertThat(bomb.err()).contains("fork"); // refused at the limit, not at the host's
        assertThat(sh(b, "echo alive").ok().out()).isEqualTo("alive\n");
        a.terminate(Duration.ZERO);
        RuntimeSandbox c = runtime.start(LocalTesting.spec()); // a place is free again
        c.terminate(Duration.ZERO);
        b.terminate(Duration.ZERO);
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aSandboxWithNetworkReachesNeitherTheHostNorMetadataNorTheServer(String mode) throws Exception {
        LocalRuntime runtime = runtime(mode);
        try (java.net.ServerSocket host = new java.net.ServerSocket(0, 50, java.net.InetAddress.getByName("0.0.0.0"))) {
            int port = host.getLocalPort();
            RuntimeSandbox net = runtime.start(new SandboxSpec(
                    LocalTesting.newId(), "", Map.of(), "/workspace", ResourceLimits.NONE, true, List.of()));
            String probe = "import socket, sys\n"
                    + "for h in sys.argv[2:]:\n"
                    + "    try:\n"
                    + "        socket.create_connection((h, int(sys.argv[1])), 3).close(); print(h, 'open')\n"
                    + "    except OSError as e:\n"
                    + "        print(h, 'refused', type(e).__name__)\n";
            List<String> targets = new ArrayList<>(List.of("127.0.0.1", "10.0.2.2", "169.254.169.254"));
            java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())
                    .forEach(i -> i.inetAddresses()
                            .filter(a -> a instanceof java.net.Inet4Address)
                            .forEach(a -> targets.add(a.getHostAddress())));
            List<String> args = new ArrayList<>(List.of("-c", probe, Integer.toString(port)));
            args.addAll(targets);
            LocalTesting.Run r = LocalTesting.run(net, command("python3", args.toArray(String[]::new)));
            assertThat(r.out()).as(r.err()).doesNotContain(" open").contains("127.0.0.1 refused");
            assertThat(sh(net, "cat /etc/resolv.conf; ls /sys/class/net 2>/dev/null || ip -o link")
                            .out())
                    .contains("nameserver 10.0.2.3");
            // without network: only loopback
            RuntimeSandbox none = runtime.start(LocalTesting.spec());
            assertThat(sh(none, "cat /proc/net/dev").ok().out())
                    .doesNotContain("tap0")
                    .contains("lo:");
            assertThat(sh(net, "cat /proc/net/dev").ok().out()).contains("tap0");
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p).trim();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
