package ai.chalk.compute.server.runtime.docker;

import static ai.chalk.compute.server.runtime.RuntimeTesting.command;
import static ai.chalk.compute.server.runtime.RuntimeTesting.processesInSandbox;
import static ai.chalk.compute.server.runtime.RuntimeTesting.readLine;
import static ai.chalk.compute.server.runtime.RuntimeTesting.sh;
import static ai.chalk.compute.server.runtime.RuntimeTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What is particular to the docker runtime: container settings, host pids and exec groups, adoption, errors. */
@Tag("alone")
class DockerRuntimeTest extends DockerTesting.WithRuntime {

    private static String inspect(RuntimeSandbox sb, String format) {
        DockerTesting.Result r =
                DockerTesting.docker("inspect", "--format", format, ((DockerSandbox) sb).containerId());
        assertThat(r.code()).as(r.output()).isZero();
        return r.output().trim();
    }

    /**
     * Before, the docker runtime had no limit on sandboxes: a tenant could start containers on the engine (each with
     * server threads watching it) until the host gave out, where the local runtime stopped at {@code --max-sandboxes}.
     */
    @Test
    void startsNoMoreThanItsLimitAndAFreedPlaceIsTakenAgain(@TempDir Path state) throws Exception {
        try (DockerRuntime limited = DockerRuntime.builder(state)
                .defaultImage(DockerTesting.image())
                .maxSandboxes(2)
                .build()) {
            RuntimeSandbox a = limited.start(spec());
            RuntimeSandbox b = limited.start(spec());
            assertThatThrownBy(() -> limited.start(spec()))
                    .isInstanceOf(RuntimeStartException.class)
                    .hasMessageContaining("this server runs at most 2 sandboxes at once and all are in use");
            a.terminate(Duration.ZERO);
            RuntimeSandbox c = limited.start(spec());
            assertThat(c.exec(command("true"))
                            .onExit()
                            .get(30, TimeUnit.SECONDS)
                            .exitCode())
                    .hasValue(0);
            b.terminate(Duration.ZERO);
            c.terminate(Duration.ZERO);
        }
    }

    @Test
    void theContainerIsLabelledLimitedAndStripped() throws Exception {
        SandboxSpec spec = new SandboxSpec(
                RuntimeTesting.newId(),
                "",
                Map.of("MODE", "test"),
                "/srv/work",
                new ResourceLimits(Optional.of(1500L), Optional.of(256L * 1024 * 1024)),
                false,
                List.of());
        RuntimeSandbox sb = runtime.start(spec);
        assertThat(inspect(sb, "{{index .Config.Labels \"ai.chalk.compute.sandbox\"}}"))
                .isEqualTo(spec.id());
        assertThat(inspect(sb, "{{index .Config.Labels \"ai.chalk.compute.server\"}}"))
                .isEqualTo(runtime.key());
        assertThat(inspect(sb, "{{.Config.Image}}")).isEqualTo(DockerTesting.IMAGE);
        assertThat(inspect(sb, "{{.HostConfig.NetworkMode}}")).isEqualTo("none");
        assertThat(inspect(
                        sb,
                        "{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} "
                                + "{{.HostConfig.PidsLimit}}"))
                .isEqualTo("1500000000 268435456 268435456 4096");
        assertThat(inspect(sb, "{{.HostConfig.CapDrop}}")).isEqualTo("[ALL]");
        assertThat(inspect(sb, "{{.HostConfig.SecurityOpt}}")).isEqualTo("[no-new-privileges]");
        assertThat(inspect(sb, "{{.Config.WorkingDir}}")).isEqualTo("/srv/work");
        // from inside: the workdir exists, the env is there, only the kept capabilities, no new privileges
        assertThat(RuntimeTesting.sh(sb, "pwd; echo $MODE").ok().out()).isEqualTo("/srv/work\ntest\n");
        String status = RuntimeTesting.sh(sb, "grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status")
                .ok()
                .out();
        // CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6, SETUID 7, NET_BIND_SERVICE 10
        assertThat(status)
                .contains("CapEff:\t00000000000004fb")
                .contains("CapBnd:\t00000000000004fb")
                .contains("NoNewPrivs:\t1");
        for (String attempt : List.of(
                "mknod /tmp/mem c 1 1",
                "hostname other",
                "mount -t tmpfs none /mnt",
                "chroot / true",
                "ip link add dummy0 type dummy")) {
            assertThat(RuntimeTesting.sh(sb, attempt + " 2>&1 && echo SUCCEEDED")
                            .out())
                    .as(attempt)
                    .doesNotContain("SUCCEEDED");
        }
        assertThat(runtime.isolation().level()).isEqualTo("container");
        assertThat(runtime.isolation().isolated()).isTrue();
        assertThat(runtime.isolation().detail()).contains("Docker Engine").contains("no-new-privileges");
    }

    /**
     * A sandbox that sets no limits gets the local runtime's defaults: before, its container had no memory limit (the
     * host's OOM killer then chose among the server and every tenant) and a million open files per process.
     */
    @Test
    void aSandboxThatSetsNoLimitsGetsTheDefaultMemoryAndOpenFiles() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        assertThat(inspect(sb, "{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}}"))
                .isEqualTo((4L << 30) + " " + (4L << 30));
        assertThat(RuntimeTesting.sh(
                                sb,
                                "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null"
                                        + " || cat /sys/fs/cgroup/memory.max; ulimit -n")
                        .ok()
                        .out())
                .isEqualTo((4L << 30) + "\n16384\n");
    }

    /**
     * A tenant names an image of a registry the server's user has logged in to: docker-java sent that login with the
     * pull (from {@code DOCKER_CONFIG}'s {@code config.json}), so the tenant got the operator's private images. The
     * registry here is a stand-in on loopback (no registry image can be had here) that asks every request for Basic
     * credentials and notes what it gets; the engine falls back to plain HTTP for a loopback registry.
     */
    @Test
    void anImageIsPulledWithoutTheServersRegistryCredentials(@TempDir Path config) throws Exception {
        List<String> authorizations = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.net.ServerSocket registry = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        Thread serving = new Thread(() -> {
            while (!registry.isClosed()) {
                try (java.net.Socket c = registry.accept()) {
                    // the engine tries TLS first: closing at its hello makes it fall back to HTTP at once
                    java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(
                            c.getInputStream(), java.nio.charset.StandardCharsets.ISO_8859_1));
                    in.mark(1);
                    if (in.read() == 0x16) {
                        continue;
                    }
                    in.reset();
                    String authorization = "none";
                    for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
                        if (line.regionMatches(true, 0, "Authorization:", 0, 14)) {
                            authorization = line.substring(14).strip();
                        }
                    }
                    authorizations.add(authorization);
                    c.getOutputStream()
                            .write(("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"chalk-test\"\r\n"
                                            + "Docker-Distribution-API-Version: registry/2.0\r\nContent-Length: 0\r\n"
                                            + "Connection: close\r\n\r\n")
                                    .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
                } catch (java.io.IOException e) {
                    // closed at the end of the test, or a connection that went away
                }
            }
        });
        serving.setDaemon(true);
        serving.start();
        String address = "127.0.0.1:" + registry.getLocalPort();
        String login = java.util.Base64.getEncoder().encodeToString("operator:s3cret".getBytes());
        Files.writeString(
                config.resolve("config.json"), "{\"auths\":{\"" + address + "\":{\"auth\":\"" + login + "\"}}}");
        String before = System.getProperty("DOCKER_CONFIG");
        System.setProperty("DOCKER_CONFIG", config.toString());
        DockerRuntime logged = DockerTesting.runtime(config.resolve("state"));
        try {
            SandboxSpec spec = new SandboxSpec(
                    RuntimeTesting.newId(),
                    address + "/team/app:v1",
                    Map.of(),
                    "/",
                    ResourceLimits.NONE,
                    false,
                    List.of());
            // a registry on the server's host is never asked (RegistryOnTheHostSecurityTest)
            assertThatThrownBy(() -> logged.start(spec))
                    .isInstanceOf(RuntimeStartException.class)
                    .hasMessageContaining("images are not pulled from there");
            assertThat(authorizations).isEmpty();
            // the pull itself, from this one on loopback, sends no credentials
            assertThat(ImagePull.pullFromAnyRegistry(logged.engine().client(), spec.image(), Duration.ofMinutes(1)))
                    .isPresent();
            assertThat(authorizations).as("the registry was asked").isNotEmpty();
            assertThat(authorizations).as("what the registry was sent").containsOnly("none");
        } finally {
            logged.close();
            if (before == null) {
                System.clearProperty("DOCKER_CONFIG");
            } else {
                System.setProperty("DOCKER_CONFIG", before);
            }
            registry.close();
        }
    }

    /**
     * With an engine on another host, a signal is sent by the container's own {@code /bin/sh}: one its root made wait
     * forever held the caller's thread forever, one more with each call. Now that exec is given a few seconds.
     */
    @Test
    void aShellThatNeverEndsDoesNotHoldASignalOnARemoteEngine(@TempDir Path remoteState) throws Exception {
        DockerRuntime remote = DockerRuntime.builder(remoteState)
                .defaultImage(DockerTesting.image())
                .useHost(false)
                .build();
        try {
            RuntimeSandbox sb = remote.start(spec());
            RuntimeProcess sleeping = sb.exec(command("sleep", "600"));
            RuntimeTesting.sh(
                            sb,
                            "printf '#!/bin/busybox sh\\nexec /bin/busybox sleep 600\\n' > /sh.new"
                                    + " && chmod 755 /sh.new && mv /sh.new /bin/sh")
                    .ok();
            long started = System.nanoTime();
            java.util.concurrent.CompletableFuture.runAsync(() -> sleeping.signal(15))
                    .get(60, TimeUnit.SECONDS);
            assertThat(Duration.ofNanos(System.nanoTime() - started))
                    .isLessThan(Duration.ofSeconds(DockerEngine.RUN_INSIDE_SECONDS + 20));
        } finally {
            remote.close();
        }
    }

    @Test
    void theInitSurvivesEverythingInsideAndReapsOrphans() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        for (int i = 0; i < 20; i++) {
            RuntimeTesting.sh(sb, "(sleep 0.05 &)").ok();
        }
        Thread.sleep(300);
        String ps = RuntimeTesting.sh(sb, "ps -o pid,stat,args").ok().out();
        assertThat(ps.lines().skip(1).map(l -> l.trim().split("\\s+")[1])).noneMatch(s -> s.startsWith("Z"));
        RuntimeTesting.sh(sb, "kill -9 1; kill -TERM 1; kill -KILL -1");
        assertThat(RuntimeTesting.sh(sb, "echo alive").ok().out()).isEqualTo("alive\n");
        assertThat(sb.onStopped()).isNotDone();
    }

    /**
     * Every exec runs the sandbox's {@code /bin/sh}, which its root may replace: one writing to stderr without end
     * (or to stdout without a newline) was read whole for the 30 s the wrapper's first line may take, into the
     * server's heap. Now past a bound before that line the exec fails, saying why.
     */
    @Test
    void aShellThatWritesWithoutEndBeforeTheWrappersLineFailsTheExecNotTheServer() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        RuntimeTesting.sh(
                        sb,
                        "printf '#!/bin/busybox sh\\n/bin/busybox yes flood >&2\\n' > /sh.new && chmod 755 /sh.new"
                                + " && mv /sh.new /bin/sh")
                .ok();
        long started = System.nanoTime();
        assertThatThrownBy(() -> RuntimeTesting.sh(sb, "echo hi"))
                .isInstanceOf(ProcessStartException.class)
                .hasMessageContaining("before saying whether the command started");
        assertThat(Duration.ofNanos(System.nanoTime() - started))
                .as("refused as soon as the bound is read, not at the start timeout")
                .isLessThan(Duration.ofSeconds(10));
    }

    @Test
    void withTheNetworkTheSandboxIsOnTheSandboxesBridge() throws Exception {
        SandboxSpec spec =
                new SandboxSpec(RuntimeTesting.newId(), "", Map.of(), "/", ResourceLimits.NONE, true, List.of());
        RuntimeSandbox sb = runtime.start(spec);
        assertThat(inspect(sb, "{{.HostConfig.NetworkMode}}")).isEqualTo(NetworkFence.SANDBOXES);
        String devs = RuntimeTesting.sh(sb, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
                .ok()
                .out();
        assertThat(devs.lines()).contains("lo", "eth0");
    }

    @Test
    void execsAreSeenOnTheHostAndInTheirOwnGroup() throws Exception {
        DockerSandbox sb = (DockerSandbox) runtime.start(spec());
        assertThat(sb.host()).isPresent();
        assertThat(sb.host().get().groups()).as("exec groups").isNotNull();
        DockerProcess p = (DockerProcess) sb.exec(sh("echo $$; exec sleep 4721"));
        assertThat(readLine(p.stdout())).isEqualTo(Long.toString(p.pid()));
        assertThat(p.hostPid()).isPositive().isNotEqualTo(p.pid());
        assertThat(Procfs.innermostPid(p.hostPid())).isEqualTo(p.pid());
        String cgroup = Files.readString(Path.of("/proc", Long.toString(p.hostPid()), "cgroup"));
        assertThat(cgroup).contains(sb.containerId() + "/chalk-exec-");
        p.signal(15);
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(15));
    }

    @Test
    void killTreeReachesDaemonsThatLeftTheTree() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        RuntimeProcess p = sb.exec(sh("sleep 4712 & setsid sleep 4712 & (setsid sh -c 'sleep 4712 &' &); "
                + "(sleep 4712 > /dev/null 2>&1 &); echo started; sleep 4712"));
        assertThat(readLine(p.stdout())).isEqualTo("started");
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> processesInSandbox(sb, "sleep 4712") == 5);
        RuntimeProcess other = sb.exec(command("sleep", "4713"));
        p.killTree();
        assertThat(processesInSandbox(sb, "sleep 4712")).isZero();
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(9));
        assertThat(processesInSandbox(sb, "sleep 4713")).isEqualTo(1);
        other.killTree();
        assertThat(RuntimeTesting.sh(sb, "echo ok").ok().out()).isEqualTo("ok\n");
    }

    @Test
    void terminateSendsTermThenKillsWhatIgnoresIt() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        RuntimeTesting.sh(sb, "setsid sh -c 'trap \"\" TERM; exec sleep 4703' > /dev/null 2>&1 < /dev/null &")
                .ok();
        RuntimeProcess polite = sb.exec(sh("trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done"));
        assertThat(readLine(polite.stdout())).isEqualTo("ready");
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> processesInSandbox(sb, "sleep 4703") == 1);
        long started = System.nanoTime();
        sb.terminate(Duration.ofMillis(700));
        long tookMillis = (System.nanoTime() - started) / 1_000_000;
        assertThat(tookMillis).isGreaterThanOrEqualTo(600).isLessThan(5_000);
        RuntimeTesting.Run r = RuntimeTesting.collect(polite);
        assertThat(r.out()).isEqualTo("bye\n");
        assertThat(r.status()).isEqualTo(ExitStatus.exited(0));
        assertThat(RuntimeTesting.hostProcessesRunning("sleep 4703")).isEmpty();
        assertThat(DockerTesting.docker("inspect", ((DockerSandbox) sb).containerId())
                        .code())
                .isNotZero();
    }

    @Test
    void aContainerThatStopsByItselfEndsTheSandbox() throws Exception {
        DockerSandbox sb = (DockerSandbox) runtime.start(spec());
        RuntimeProcess p = sb.exec(command("sleep", "4722"));
        assertThat(DockerTesting.docker("kill", sb.containerId()).code()).isZero();
        assertThat(sb.onStopped().get(10, TimeUnit.SECONDS)).contains("stopped").contains("signal 9");
        // the kill came from outside the server: the exec may see its command end with status 137 before the
        // runtime learns that the container stopped (then it reports the signal); both say SIGKILL
        assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isIn(ExitStatus.signalled(9), ExitStatus.exited(137));
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> DockerTesting.docker("inspect", sb.containerId()).code() != 0);
        assertThatThrownBy(() -> sb.exec(command("true")))
                .isInstanceOf(ProcessStartException.class)
                .hasMessageContaining("not running");
    }

    @Test
    void volumesAreBindMountedAndShared(@TempDir Path volume) throws Exception {
        Files.writeString(volume.resolve("from-host"), "host data\n");
        SandboxSpec a = new SandboxSpec(
                RuntimeTesting.newId(),
                "",
                Map.of(),
                "/workspace",
                ResourceLimits.NONE,
                false,
                List.of(),
                List.of(new SandboxSpec.VolumeBinding(volume, "/data")));
        SandboxSpec b = new SandboxSpec(
                RuntimeTesting.newId(),
                "",
                Map.of(),
                "/workspace",
                ResourceLimits.NONE,
                false,
                List.of(),
                List.of(new SandboxSpec.VolumeBinding(volume, "/mnt/shared")));
        RuntimeSandbox sa = runtime.start(a);
        RuntimeSandbox sb = runtime.start(b);
        assertThat(RuntimeTesting.sh(sa, "cat /data/from-host && echo from-a > /data/a")
                        .ok()
                        .out())
                .isEqualTo("host data\n");
        assertThat(RuntimeTesting.sh(sb, "cat /mnt/shared/a").ok().out()).isEqualTo("from-a\n");
        sa.terminate(Duration.ZERO);
        assertThat(volume.resolve("a")).hasContent("from-a");
    }

    @Test
    void anEntrypointStartsWithTheSandbox() throws Exception {
        SandboxSpec spec = new SandboxSpec(
                RuntimeTesting.newId(),
                "",
                Map.of(),
                "/workspace",
                ResourceLimits.NONE,
                false,
                List.of("/bin/sh", "-c", "echo up > /tmp/entrypoint; exec sleep 4723"));
        RuntimeSandbox sb = runtime.start(spec);
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> RuntimeTesting.sh(sb, "cat /tmp/entrypoint 2>/dev/null")
                        .out()
                        .equals("up\n"));
        assertThat(processesInSandbox(sb, "sleep 4723")).isEqualTo(1);
        SandboxSpec bad = new SandboxSpec(
                RuntimeTesting.newId(), "", Map.of(), "/", ResourceLimits.NONE, false, List.of("nope-cmd"));
        assertThatThrownBy(() -> runtime.start(bad))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("command not found in sandbox: nope-cmd");
        assertThat(DockerTesting.docker("inspect", DockerRuntime.containerName(bad.id()))
                        .code())
                .isNotZero();
    }

    @Test
    void aRestartedServerAdoptsItsRunningSandboxesAndRemovesTheRest() throws Exception {
        RuntimeSandbox kept = runtime.start(spec());
        RuntimeSandbox dropped = runtime.start(spec());
        RuntimeTesting.sh(kept, "echo kept > /workspace/state; setsid sleep 4724 > /dev/null 2>&1 < /dev/null &")
                .ok();
        String droppedContainer = ((DockerSandbox) dropped).containerId();
        // another server's container is none of this one's business
        try (DockerRuntime other = DockerTesting.runtime(Files.createTempDirectory(state, "other"))) {
            RuntimeSandbox foreign = other.start(spec());
            runtime.abandon(); // as a crash would: containers keep running
            runtime = DockerTesting.runtime(state);
            Collection<RuntimeSandbox> adopted = runtime.reconcile(List.of(kept.id(), "gone-1"));
            assertThat(adopted).extracting(RuntimeSandbox::id).containsExactly(kept.id());
            RuntimeSandbox again = adopted.iterator().next();
            assertThat(RuntimeTesting.sh(again, "cat /workspace/state; pwd")
                            .ok()
                            .out())
                    .isEqualTo("kept\n/workspace\n");
            // what the cut exec left is gone: nobody has a record of it (DockerLifetimeSecurityTest has more)
            assertThat(processesInSandbox(again, "sleep 4724")).isZero();
            assertThat(DockerTesting.docker("inspect", droppedContainer).code()).isNotZero();
            assertThat(RuntimeTesting.sh(foreign, "echo mine").ok().out()).isEqualTo("mine\n");
            again.terminate(Duration.ZERO);
            assertThat(RuntimeTesting.hostProcessesRunning("sleep 4724")).isEmpty();
        }
    }

    /**
     * Two servers whose state directories have the same path (two hosts on one engine; here a directory made again
     * where the first one's was moved): the key was the path's hash, so the second took the first's sandboxes for
     * its own leftovers and removed them at start.
     */
    @Test
    void aServerWithAnothersStateDirectoryPathLeavesItsSandboxesAlone(@TempDir Path dir) throws Exception {
        Path path = dir.resolve("state");
        try (DockerRuntime first = DockerTesting.runtime(path)) {
            RuntimeSandbox sb = first.start(spec());
            Files.move(path, dir.resolve("moved"));
            try (DockerRuntime second = DockerTesting.runtime(path)) {
                assertThat(second.key()).isNotEqualTo(first.key());
                assertThat(second.reconcile(List.of())).isEmpty();
                assertThat(RuntimeTesting.sh(sb, "echo mine").ok().out()).isEqualTo("mine\n");
            }
            sb.terminate(Duration.ZERO);
        }
    }

    /** A state directory from before the key file keeps its path's key while its containers run. */
    @Test
    void aStateDirectoryFromBeforeTheKeyFileKeepsItsSandboxes(@TempDir Path state) throws Exception {
        // the old server's key: the hash of the directory's path
        String pathKey = ai.chalk.compute.server.runtime.host.StateDirKey.of(state.toRealPath());
        Files.writeString(state.resolve(ServerKey.FILE), pathKey);
        DockerRuntime old = DockerTesting.runtime(state);
        RuntimeSandbox sb = old.start(spec());
        old.abandon();
        Files.delete(state.resolve(ServerKey.FILE));
        try (DockerRuntime restarted = DockerTesting.runtime(state)) {
            assertThat(restarted.key()).isEqualTo(pathKey);
            Collection<RuntimeSandbox> adopted = restarted.reconcile(List.of(sb.id()));
            assertThat(adopted).extracting(RuntimeSandbox::id).containsExactly(sb.id());
            adopted.iterator().next().terminate(Duration.ZERO);
        }
        // a directory without the file and without containers gets a random key
        Files.delete(state.resolve(ServerKey.FILE));
        try (DockerRuntime fresh = DockerTesting.runtime(state)) {
            assertThat(fresh.key()).isNotEqualTo(pathKey).matches("[0-9a-f]{12}");
        }
    }

    @Test
    void aMissingEngineOrImageIsAClearError(@TempDir Path other) {
        assertThatThrownBy(() -> DockerRuntime.builder(other)
                        .dockerHost("unix:///nonexistent/docker.sock")
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("no Docker engine at unix:///nonexistent/docker.sock: start dockerd or use"
                        + " --runtime local");
        assertThat(DockerRuntime.engineAnswers("unix:///nonexistent/docker.sock", Duration.ofSeconds(1)))
                .isFalse();
        assertThat(DockerRuntime.engineAnswers(null, Duration.ofSeconds(5))).isTrue();
        try (DockerRuntime noDefault = DockerRuntime.builder(other)
                .defaultImage("chalk-compute-test/absent:1")
                .build()) {
            assertThatThrownBy(() -> noDefault.start(spec()))
                    .isInstanceOf(RuntimeStartException.class)
                    .hasMessageContaining("the default sandbox image \"chalk-compute-test/absent:1\" is not on the"
                            + " Docker engine")
                    .hasMessageContaining("ci/build-test-images.sh");
            SandboxSpec explicit = new SandboxSpec(
                    RuntimeTesting.newId(),
                    "chalk-compute-test/absent:2",
                    Map.of(),
                    "/",
                    ResourceLimits.NONE,
                    false,
                    List.of());
            assertThatThrownBy(() -> noDefault.start(explicit))
                    .isInstanceOf(RuntimeStartException.class)
                    .hasMessageContaining("image \"chalk-compute-test/absent:2\" is not on the Docker engine");
        }
    }

    @Test
    void duplicateIdsAndBadSpecsAreStartErrors() throws Exception {
        SandboxSpec spec = spec();
        runtime.start(spec);
        assertThatThrownBy(() -> runtime.start(spec))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("already running");
        SandboxSpec tinyMemory = new SandboxSpec(
                RuntimeTesting.newId(),
                "",
                Map.of(),
                "/",
                new ResourceLimits(Optional.empty(), Optional.of(1024L)),
                false,
                List.of());
        assertThatThrownBy(() -> runtime.start(tinyMemory))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("emory");
        // an image without a shell cannot hold a sandbox
        DockerTesting.Result imported = DockerTesting.run(List.of(
                "sh",
                "-c",
                "docker image inspect chalk-compute-test/no-shell:latest > /dev/null 2>&1"
                        + " || tar -c -T /dev/null | docker import - chalk-compute-test/no-shell:latest"));
        assertThat(imported.code()).as(imported.output()).isZero();
        SandboxSpec noShell = new SandboxSpec(
                RuntimeTesting.newId(),
                "chalk-compute-test/no-shell:latest",
                Map.of(),
                "/",
                ResourceLimits.NONE,
                false,
                List.of());
        assertThatThrownBy(() -> runtime.start(noShell))
                .isInstanceOf(RuntimeStartException.class)
                .hasMessageContaining("/bin/sh");
        assertThat(DockerTesting.docker("inspect", DockerRuntime.containerName(noShell.id()))
                        .code())
                .isNotZero();
    }
}
