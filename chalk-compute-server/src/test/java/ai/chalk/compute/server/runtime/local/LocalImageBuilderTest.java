package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.command;
import static ai.chalk.compute.server.runtime.local.LocalTesting.run;
import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.AddFileStep;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.DockerfileCommandsStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.image.BuildLimits;
import ai.chalk.compute.server.image.ImageBuildException;
import ai.chalk.compute.server.image.ImageBuilder;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SocketBufferHoard;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.local.image.LocalImageBuilder;
import com.google.protobuf.ByteString;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The local runtime's image builds: real build sandboxes over real overlays, and sandboxes started from them. */
@Tag("alone")
class LocalImageBuilderTest {

    @TempDir
    Path temp;

    Path state;
    LocalRuntime runtime;
    ImageBuilder builder;

    @BeforeAll
    static void images() {
        DockerTesting.debianImage(); // built the way CI builds it when missing
    }

    @BeforeEach
    void start() throws Exception {
        state = Files.createDirectories(temp.resolve("state"));
        runtime = new LocalRuntime(state, LocalIsolation.AUTO);
        builder = runtime.imageBuilder();
    }

    @AfterEach
    void stop() throws Exception {
        runtime.close();
        NoFollowDelete.delete(state);
    }

    static BuildStep runStep(String... commands) {
        return BuildStep.newBuilder()
                .setRunCommands(RunCommandsStep.newBuilder().addAllCommands(List.of(commands)))
                .build();
    }

    static BuildStep addFile(String destination, String content, int mode) {
        return BuildStep.newBuilder()
                .setAddFile(AddFileStep.newBuilder()
                        .setDestination(destination)
                        .setContent(ByteString.copyFromUtf8(content))
                        .setMode(mode))
                .build();
    }

    /** Builds, recording the log; the hash stands for the spec's content hash. */
    String build(ImageSpec spec, List<String> log) throws Exception {
        builder.check(spec);
        String hash = Integer.toHexString(spec.hashCode());
        return builder.build(spec, "0".repeat(64 - hash.length()) + hash, log::add);
    }

    ImageSpec.Builder busyboxSpec() {
        return ImageSpec.newBuilder()
                .setBaseImage(LocalImageSandboxTest.BUSYBOX)
                .setWorkdir("/app")
                .putEnv("GREETING", "hi");
    }

    @Test
    void stepsRunInTheSpecsWorkdirAndEnvAndTheImageKeepsThem() throws Exception {
        ImageSpec spec = busyboxSpec()
                .addSteps(addFile("hello.sh", "#!/bin/sh\necho \"$GREETING from $(pwd)\"\n", 0750))
                .addSteps(runStep("./hello.sh > out.txt", "echo RAN second; echo second >> out.txt; id -u >> out.txt"))
                .addSteps(addFile("/etc/motd", "welcome\n", 0600))
                .addEntrypoint("/app/hello.sh")
                .build();
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        String ref = build(spec, log);
        assertThat(ref).matches("chalk-local/[0-9a-f]{64}");
        assertThat(builder.exists(ref)).isTrue();
        assertThat(log).anyMatch(l -> l.contains("Step 2/4") && l.contains("./hello.sh > out.txt"));
        assertThat(log).contains("RAN second").noneMatch(l -> l.contains("cached"));

        RuntimeSandbox sb = runtime.start(LocalImageSandboxTest.imageSpec(ref));
        assertThat(sh(sb, "pwd; cat out.txt; echo $GREETING; stat -c %a hello.sh /etc/motd; cat /etc/motd")
                        .ok()
                        .out())
                .isEqualTo("/app\nhi from /app\nsecond\n0\nhi\n750\n600\nwelcome\n");
        sb.terminate(Duration.ZERO);
    }

    @Test
    void layersAreCachedPerStepAndAChangedStepReusesTheOnesBelow() throws Exception {
        ImageSpec first = busyboxSpec()
                .addSteps(runStep("echo RAN one; echo RAN one > /one", "echo RAN two; echo RAN two > /two"))
                .addSteps(runStep("echo RAN three; echo RAN three > /three"))
                .build();
        List<String> log1 = new ArrayList<>();
        String ref1 = build(first, log1);
        assertThat(log1).filteredOn(l -> l.startsWith("RAN")).containsExactly("RAN one", "RAN two", "RAN three");
        Map<String, Object> inodes = layerInodes();
        assertThat(inodes).hasSize(3);

        // the same spec again: every layer from the cache, no command runs
        List<String> log2 = new ArrayList<>();
        assertThat(build(first, log2)).isEqualTo(ref1);
        assertThat(log2)
                .noneMatch(l -> l.startsWith("RAN"))
                .filteredOn(l -> l.contains("cached layer"))
                .hasSize(3);
        assertThat(layerInodes()).isEqualTo(inodes);

        // step 3 changed: layers 1 and 2 are reused, only the new third one is built
        ImageSpec changed = busyboxSpec()
                .addSteps(runStep("echo RAN one; echo RAN one > /one", "echo RAN two; echo RAN two > /two"))
                .addSteps(runStep("echo RAN changed; echo RAN changed > /three"))
                .build();
        List<String> log3 = new ArrayList<>();
        String ref3 = build(changed, log3);
        assertThat(log3).filteredOn(l -> l.startsWith("RAN")).containsExactly("RAN changed");
        assertThat(log3).filteredOn(l -> l.contains("cached layer")).hasSize(2);
        Map<String, Object> after = layerInodes();
        assertThat(after).hasSize(4).containsAllEntriesOf(inodes);

        RuntimeSandbox sb = runtime.start(LocalImageSandboxTest.imageSpec(ref3));
        assertThat(run(sb, command("cat", "/one", "/two", "/three")).ok().out())
                .isEqualTo("RAN one\nRAN two\nRAN changed\n");
    }

    @Test
    void stepsWhoseEnvironmentsReadAlikeAsAMapDoNotShareALayer() throws Exception {
        // the layer cache serves every environment: a tenant whose env spells another's as one value ({A=1, B=2}
        // against {A="1, B=2"}) got the other's cached layer for its step, or put its own in the other's image
        ImageSpec victim = ImageSpec.newBuilder()
                .setBaseImage(LocalImageSandboxTest.BUSYBOX)
                .putEnv("A", "1")
                .putEnv("B", "2")
                .addSteps(runStep("echo \"B=$B\" > /b"))
                .build();
        ImageSpec attacker = ImageSpec.newBuilder()
                .setBaseImage(LocalImageSandboxTest.BUSYBOX)
                .putEnv("A", "1, B=2")
                .addSteps(runStep("echo \"B=$B\" > /b"))
                .build();
        List<String> attackerLog = new ArrayList<>();
        String attackers = build(attacker, attackerLog);
        List<String> victimLog = new ArrayList<>();
        String victims = build(victim, victimLog);
        assertThat(victimLog).as("the victim's step ran itself").noneMatch(l -> l.contains("cached layer"));
        assertThat(layerInodes()).hasSize(2);

        RuntimeSandbox sb = runtime.start(LocalImageSandboxTest.imageSpec(victims));
        assertThat(run(sb, command("cat", "/b")).ok().out()).isEqualTo("B=2\n");
        sb.terminate(Duration.ZERO);
        RuntimeSandbox other = runtime.start(LocalImageSandboxTest.imageSpec(attackers));
        assertThat(run(other, command("cat", "/b")).ok().out()).isEqualTo("B=\n");
        other.terminate(Duration.ZERO);
    }

    @Test
    void aFailingCommandNamesTheStepAndLeavesNoLayer() throws Exception {
        ImageSpec spec = busyboxSpec()
                .addSteps(runStep("echo fine"))
                .addSteps(runStep("echo about to fail; echo oops >&2; exit 3"))
                .build();
        assertThatThrownBy(() -> build(spec, new ArrayList<>()))
                .isInstanceOf(ImageBuildException.class)
                .hasMessageContaining("image_spec.steps[1] (run_commands)")
                .hasMessageContaining("`echo about to fail; echo oops >&2; exit 3`")
                .hasMessageContaining("exit code 3")
                .hasMessageContaining("about to fail")
                .hasMessageContaining("oops");
        assertThat(layerInodes()).hasSize(1);
        try (var tmp = Files.list(state.resolve("images/tmp"))) {
            assertThat(tmp.toList()).isEmpty();
        }
    }

    @Test
    void stepsTheLocalRuntimeCannotBuildAreRefusedUpFront() {
        ImageSpec spec = busyboxSpec()
                .addSteps(runStep("true"))
                .addSteps(BuildStep.newBuilder()
                        .setDockerfileCommands(
                                DockerfileCommandsStep.newBuilder().addCommands("EXPOSE 80")))
                .build();
        assertThatThrownBy(() -> builder.check(spec)).isInstanceOfSatisfying(ComputeException.class, e -> {
            assertThat(e.kind()).isEqualTo(ComputeException.Kind.REFUSED);
            assertThat(e.getMessage())
                    .contains("image_spec.steps[1] (dockerfile_commands)")
                    .contains("docker runtime");
        });
        ImageSpec escaping =
                busyboxSpec().addSteps(addFile("../../etc/passwd", "x", 0644)).build();
        assertThatThrownBy(() -> builder.check(escaping))
                .isInstanceOfSatisfying(
                        ComputeException.class, e -> assertThat(e.kind()).isEqualTo(ComputeException.Kind.INVALID));
    }

    @Test
    void buildCommandsHaveDockersDefaultCapabilitiesAndNoUsableDevices() throws Exception {
        ImageSpec spec = busyboxSpec()
                .addSteps(runStep(
                        "grep -E '^Cap(Eff|Bnd)' /proc/self/status",
                        // MKNOD is the step's user namespace's: the kernel refuses device nodes there, and the overlay
                        // is
                        // nodev besides
                        "if mknod /tmp/disk b 8 0 2>/dev/null; then if head -c1 /tmp/disk >/dev/null 2>&1; then"
                                + " echo DEVICE-OPENED; exit 1; fi; fi; echo device-refused",
                        "echo x > /proc/sys/kernel/hostname 2>/dev/null && exit 1 || echo proc-sys-read-only",
                        "echo uid_map: $(cat /proc/self/uid_map)"))
                .build();
        List<String> log = new ArrayList<>();
        build(spec, log);
        // root of the step is an id range of its own on the host, not the host's root
        assertThat(log).anyMatch(l -> l.matches("uid_map: 0 \\d+ 65536") && !l.equals("uid_map: 0 0 65536"));
        // CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE SYS_CHROOT MKNOD AUDIT_WRITE
        // SETFCAP: Docker's defaults without NET_RAW
        assertThat(log)
                .contains(
                        "CapEff:\t00000000a80405fb",
                        "CapBnd:\t00000000a80405fb",
                        "device-refused",
                        "proc-sys-read-only");
    }

    @Test
    void buildCommandsRunUnderTheSyscallFilterAndMakeNoNamespaceOfTheirOwn() throws Exception {
        // a step with no filter made a user namespace of its own and, with capabilities there, reached the kernel's
        // netfilter, io_uring, keyrings and the rest a sandbox is kept from
        ImageSpec spec = busyboxSpec()
                .addSteps(runStep(
                        "grep '^Seccomp:' /proc/self/status",
                        "if unshare -U -r true 2>/dev/null; then echo USERNS-MADE; else echo userns-refused; fi",
                        "if unshare -n true 2>/dev/null; then echo NETNS-MADE; else echo netns-refused; fi",
                        "mkdir -p /jail/bin && cp /bin/busybox /jail/bin/ && chroot /jail /bin/busybox true"
                                + " && echo chroot-allowed"))
                .build();
        List<String> log = new ArrayList<>();
        build(spec, log);
        assertThat(log).contains("Seccomp:\t2", "userns-refused", "netns-refused", "chroot-allowed");
    }

    @Test
    void aptInstallsOnTheDebianBaseAndTheToolRunsInASandbox() throws Exception {
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage(LocalImageSandboxTest.DEBIAN)
                .putEnv("DEBIAN_FRONTEND", "noninteractive")
                .addSteps(runStep("apt-get update -q && apt-get install -y -q --no-install-recommends tmux"
                        + " && rm -rf /var/lib/apt/lists/*"))
                .build();
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        String ref = build(spec, log);
        assertThat(log).anyMatch(l -> l.contains("Setting up tmux"));
        RuntimeSandbox sb = runtime.start(LocalImageSandboxTest.imageSpec(ref));
        assertThat(run(sb, command("tmux", "-V")).ok().out()).startsWith("tmux 3.");
        assertThat(sh(sb, "echo $DEBIAN_FRONTEND").ok().out()).isEqualTo("noninteractive\n");
    }

    /**
     * A build step and a sandbox of the image it built each hold at most {@link SandboxDevices#PTYS} terminals of the
     * host's one pool ({@code kernel.pty.max}), which either could otherwise take whole (the step for as long as it
     * runs).
     */
    @Test
    void aBuildStepAndItsImagesSandboxesHoldFewTerminalsOfTheHost() throws Exception {
        String hoard = "perl -e 'my @t; while (@t < 5000 && open(my $f, \"+<\", \"/dev/ptmx\")) { push @t, $f }"
                + " print \"terminals: \", scalar(@t), \" $!\\n\"'";
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage(LocalImageSandboxTest.DEBIAN)
                .addSteps(runStep(hoard))
                .build();
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        String ref = build(spec, log);
        assertThat(log).contains("terminals: " + SandboxDevices.PTYS + " No space left on device");
        RuntimeSandbox sb = runtime.start(LocalImageSandboxTest.imageSpec(ref));
        assertThat(sh(sb, hoard).ok().out())
                .isEqualTo("terminals: " + SandboxDevices.PTYS + " No space left on device\n");
        sb.terminate(Duration.ZERO);
    }

    /**
     * A build step runs what the image spec's author wrote, as root of its build sandbox: it is held to a build's
     * limits ({@link BuildLimits}) in cgroups of its own, as a sandbox is held to its own, and so is the slirp4netns
     * that carries its connections. Before, steps ran in the server's cgroups with the server's limits: a fork bomb in
     * one step could take every pid of the host, a {@code tail /dev/zero} its memory, a hoard of socket buffers its
     * TCP memory (in this test, without them: 300 processes, 200 MB allocated and 400 MB of socket buffers held,
     * in a build limited to 64 MiB and 64 processes).
     */
    @Test
    void aBuildStepIsHeldToItsLimitsAndSoIsItsNetwork() throws Exception {
        ((LocalImageBuilder) builder).stepLimits(new BuildLimits(64L << 20, 500, 256, 64));
        String probe = String.join(
                "; ",
                "echo \"files $(ulimit -n)\"",
                "echo \"in build groups: $(grep -c /build- /proc/self/cgroup)\"",
                "perl -e 'my @k; while (@k < 300) { my $p = fork(); last unless defined $p;"
                        + " if (!$p) { sleep 30; exit 0 } push @k, $p } print qq(forked ), scalar(@k), qq(\\n);"
                        + " kill 9, @k'",
                "perl -e '$x = q(x) x (200 * 1024 * 1024); print qq(allocated\\n)'; echo \"memory exit $?\"",
                SocketBufferHoard.HOARD + "100 600000000",
                "echo READY; sleep 3");
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage(LocalImageSandboxTest.DEBIAN)
                .addSteps(runStep(probe))
                .build();
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<String> built = CompletableFuture.supplyAsync(() -> {
            try {
                return build(spec, log);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> log.contains("READY") || built.isDone());
        List<Long> slirps = Procfs.allPids().stream()
                .filter(pid -> Procfs.commandLine(pid).contains("slirp4netns"))
                .filter(pid ->
                        SocketMemorySecurityTest.groups(pid).values().stream().anyMatch(g -> g.contains("/build-")))
                .toList();
        built.get(60, TimeUnit.SECONDS);

        assertThat(log).contains("files 256", "memory exit 137").doesNotContain("allocated");
        assertThat(log).anyMatch(l -> l.matches("in build groups: [1-9]"));
        String forked =
                log.stream().filter(l -> l.startsWith("forked ")).findFirst().orElseThrow();
        assertThat(Integer.parseInt(forked.substring("forked ".length())))
                .as(forked)
                .isLessThan(64);
        assertThat(SocketBufferHoard.held(String.join("\n", log), 100))
                .isLessThanOrEqualTo(SocketBufferHoard.bound(64L << 20));
        assertThat(slirps).as("the step's slirp4netns, in the step's groups").hasSize(1);
        // the step's groups go with it
        assertThat(runtime.cgroups().leftoverIds()).noneMatch(id -> id.startsWith("build-"));
    }

    /**
     * A build step that writes without end is stopped once the disk holding the image cache runs low, and what it
     * wrote goes: it would otherwise fill the disk of the server's store and of every sandbox's volumes. (Here the
     * reserve is set to 300 MiB less than is free, and the step writes 4 GiB.)
     */
    @Test
    void aBuildStepThatFillsTheDiskIsStoppedAndWhatItWroteGoes() throws Exception {
        java.nio.file.FileStore disk = Files.getFileStore(state);
        long free = disk.getUsableSpace();
        ((LocalImageBuilder) builder).stepDiskReserve(free - (300L << 20));
        ImageSpec spec = busyboxSpec()
                .addSteps(runStep("echo writing; dd if=/dev/zero of=/big bs=1M count=4096 2>&1; echo wrote-it-all"))
                .build();
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        assertThatThrownBy(() -> build(spec, log))
                .isInstanceOf(ImageBuildException.class)
                .hasMessageContaining("image_spec.steps[0] (run_commands)")
                .hasMessageContaining("was stopped when the server's disk had");
        assertThat(log).contains("writing").doesNotContain("wrote-it-all");
        // the step's writes are gone with it
        assertThat(disk.getUsableSpace()).isGreaterThan(free - (100L << 20));
        // and the builder goes on building
        ((LocalImageBuilder) builder).stepDiskReserve(LocalImageBuilder.DISK_RESERVE_MIN_BYTES);
        build(busyboxSpec().addSteps(runStep("echo fine > /fine")).build(), log);
    }

    /**
     * A build step joins its user namespace with the host's {@code CAP_SYS_ADMIN} (the namespace's owner is its
     * range's first id, not root), and the program that joins it runs in the image's root, which a hostile image
     * fills: a library in its {@code /etc/ld.so.preload} or its {@code LD_PRELOAD} must never run while a capability
     * over the host is held, nor may its variables reach such a process.
     * (Run by the loader, it would hold {@code CAP_SYS_ADMIN}: a reviewer mounted a devtmpfs and opened a host disk
     * that way.) The joining program is the runtime's static busybox, which loads nothing.
     */
    @Test
    void anImagesPreloadedLibraryNeverRunsWithTheHostsCapabilities() throws Exception {
        Path source = temp.resolve("evil.c");
        Files.writeString(source, """
                #include <fcntl.h>
                #include <string.h>
                #include <unistd.h>
                static int slurp(const char *path, char *buf, int size) {
                    int fd = open(path, O_RDONLY); if (fd < 0) return 0;
                    int n = read(fd, buf, size - 1); close(fd); if (n < 0) n = 0; buf[n] = 0; return n;
                }
                __attribute__((constructor)) static void report(void) {
                    char map[256], status[4096];
                    slurp("/proc/self/uid_map", map, sizeof map);
                    if (!slurp("/proc/self/status", status, sizeof status)) return;
                    char *at = strstr(status, "CapEff:"); if (!at) return; char *end = strchr(at, '\\n');
                    const char *where = strstr(map, "4294967295") ? "EVIL host " : "EVIL step ";
                    write(2, where, strlen(where));
                    write(2, at, end ? (size_t) (end - at + 1) : strlen(at));
                }
                """);
        Path library = temp.resolve("evil.so");
        Process cc = new ProcessBuilder("gcc", "-shared", "-fPIC", "-o", library.toString(), source.toString())
                .redirectErrorStream(true)
                .start();
        String ccOut = new String(cc.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(cc.waitFor()).as("gcc (CI installs it): " + ccOut).isZero();
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage(LocalImageSandboxTest.DEBIAN)
                // the step's variables too: a dynamic program run by its loader would honour these
                .putEnv("LD_PRELOAD", "/usr/lib/evil.so")
                .putEnv("GLIBC_TUNABLES", "glibc.malloc.check=0")
                .addSteps(BuildStep.newBuilder()
                        .setAddFile(AddFileStep.newBuilder()
                                .setDestination("/usr/lib/evil.so")
                                .setContent(ByteString.copyFrom(Files.readAllBytes(library)))
                                .setMode(0755)))
                .addSteps(addFile("/etc/ld.so.preload", "/usr/lib/evil.so\n", 0644))
                .addSteps(runStep("echo step-ran"))
                .build();
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        build(spec, log);
        assertThat(log).contains("step-ran");
        // the library does run, in the step's own processes (its loader reads the image's preload list)
        assertThat(log).anyMatch(l -> l.startsWith("EVIL step "));
        assertThat(log.stream().filter(l -> l.startsWith("EVIL host ")))
                .as("processes of the host's user namespace that ran the image's library")
                .allMatch(l -> l.equals("EVIL host CapEff:\t0000000000000000"));
    }

    private Map<String, Object> layerInodes() throws Exception {
        Map<String, Object> m = new HashMap<>();
        try (var s = Files.list(state.resolve("images/layers"))) {
            for (Path p : s.toList()) {
                m.put(p.getFileName().toString(), Files.getAttribute(p, "unix:ino"));
            }
        }
        return m;
    }
}
