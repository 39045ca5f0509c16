package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.collect;
import static ai.chalk.compute.server.runtime.local.LocalTesting.command;
import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static ai.chalk.compute.server.runtime.local.LocalTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessSpec.TerminalSize;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Processes in a bubblewrap sandbox: streams, signals, trees, terminals, environment. */
class LocalRuntimeProcessTest {

    @TempDir
    Path state;
    LocalRuntime runtime;
    RuntimeSandbox sandbox;

    @BeforeEach
    void start() throws Exception {
        runtime = new LocalRuntime(state, LocalIsolation.AUTO);
        sandbox = runtime.start(spec(Map.of("FROM_SANDBOX", "s", "SHARED", "sandbox"), ResourceLimits.NONE));
    }

    @AfterEach
    void stop() {
        runtime.close();
    }

    @Test
    void stdinRoundTripsThroughCat() throws Exception {
        RuntimeProcess p = sandbox.exec(command("cat"));
        var out = LocalTesting.drain(p.stdout());
        byte[] data = "hello\nworld\n".repeat(10_000).getBytes(StandardCharsets.UTF_8);
        p.stdin().write(data);
        p.stdin().close();
        assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
        assertThat(out.get(5, TimeUnit.SECONDS)).isEqualTo(new String(data, StandardCharsets.UTF_8));
        assertThat(p.pty()).isFalse();
    }

    @Test
    void pidIsThePidInsideTheSandbox() throws Exception {
        RuntimeProcess p = sandbox.exec(sh("echo $$; exec cat"));
        String first = readLine(p.stdout());
        assertThat(p.pid()).isEqualTo(Long.parseLong(first)).isLessThan(100);
        p.stdin().close();
        assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
    }

    @Test
    void sigtermAndSigkillAreReportedAsSignals() throws Exception {
        for (int signal : List.of(15, 9, 1)) {
            RuntimeProcess p = sandbox.exec(command("sleep", "4711"));
            assertThat(p.pid()).isPositive();
            p.signal(signal);
            assertThat(collect(p).status()).isEqualTo(ExitStatus.signalled(signal));
        }
    }

    @Test
    void sigintReachesATrap() throws Exception {
        RuntimeProcess p = sandbox.exec(sh("trap 'echo interrupted; exit 3' INT; echo ready; while :; do sleep 0.02; done"));
        assertThat(readLine(p.stdout())).isEqualTo("ready");
        p.signal(2);
        LocalTesting.Run r = collect(p);
        assertThat(r.status()).isEqualTo(ExitStatus.exited(3));
        assertThat(r.out()).isEqualTo("interrupted\n");
    }

    @Test
    void exitCodesAreReportedAsTheyAre() throws Exception {
        assertThat(LocalTesting.sh(sandbox, "exit 7").status()).isEqualTo(ExitStatus.exited(7));
        // a signal the runtime did not deliver is an exit code (as nsenter reports it)
        assertThat(LocalTesting.sh(sandbox, "kill -TERM $$").status()).isEqualTo(ExitStatus.exited(143));
        LocalTesting.Run r = LocalTesting.sh(sandbox, "echo out; echo err >&2; exit 1");
        assertThat(r.out()).isEqualTo("out\n");
        assertThat(r.err()).isEqualTo("err\n");
        assertThat(r.status()).isEqualTo(ExitStatus.exited(1));
    }

    @Test
    void killTreeKillsEverythingTheProcessStarted() throws Exception {
        RuntimeProcess p = sandbox.exec(sh("sleep 4712 & setsid sleep 4712 & (setsid sh -c 'sleep 4712 &' &); "
                + "nohup sleep 4712 > /dev/null 2>&1 & echo started; sleep 4712"));
        assertThat(readLine(p.stdout())).isEqualTo("started");
        Awaitility.await().atMost(Duration.ofSeconds(5))
                .until(() -> LocalTesting.hostProcessesRunning("sleep 4712").size() == 5);
        // a process of another exec is not part of this tree
        RuntimeProcess other = sandbox.exec(command("sleep", "4713"));
        p.killTree();
        assertThat(LocalTesting.hostProcessesRunning("sleep 4712")).isEmpty();
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(9));
        assertThat(LocalTesting.hostProcessesRunning("sleep 4713")).hasSize(1);
        other.killTree();
        assertThat(LocalTesting.hostProcessesRunning("sleep 4713")).isEmpty();
        // the sandbox itself is fine
        assertThat(LocalTesting.sh(sandbox, "echo ok").ok().out()).isEqualTo("ok\n");
    }

    @Test
    void aPtyIsATerminalAndFollowsResizes() throws Exception {
        ProcessSpec spec = new ProcessSpec("/bin/sh", List.of("-c",
                "test -t 0 && test -t 1 && echo is-a-terminal; echo TERM=$TERM; stty size; read x; stty size"),
                Optional.empty(), Map.of(), Optional.of(new TerminalSize(80, 24)));
        RuntimeProcess p = sandbox.exec(spec);
        assertThat(p.pty()).isTrue();
        StringBuilder seen = new StringBuilder();
        InputStream out = p.stdout();
        readUntil(out, seen, "24 80");
        p.resize(100, 30);
        p.stdin().write("\n".getBytes(StandardCharsets.UTF_8));
        p.stdin().flush();
        readUntil(out, seen, "30 100");
        assertThat(seen.toString()).contains("is-a-terminal").contains("TERM=xterm-256color");
        assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
        assertThat(p.stderr().read()).isEqualTo(-1);
    }

    @Test
    void ctrlCOnAPtyInterruptsTheCommandOnly() throws Exception {
        ProcessSpec spec = new ProcessSpec("/bin/sh", List.of("-c",
                "trap 'echo got-ctrl-c; exit 5' INT; echo ready; while :; do sleep 0.02; done"),
                Optional.empty(), Map.of(), Optional.of(new TerminalSize(80, 24)));
        RuntimeProcess p = sandbox.exec(spec);
        StringBuilder seen = new StringBuilder();
        readUntil(p.stdout(), seen, "ready");
        p.stdin().write(3);
        p.stdin().flush();
        readUntil(p.stdout(), seen, "got-ctrl-c");
        assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(5));
    }

    @Test
    void signalsToAPtyProcessAreReportedAsSignals() throws Exception {
        for (int signal : List.of(15, 9)) {
            ProcessSpec spec = new ProcessSpec("sleep", List.of("4716"), Optional.empty(), Map.of(),
                    Optional.of(new TerminalSize(80, 24)));
            RuntimeProcess p = sandbox.exec(spec);
            var out = LocalTesting.drain(p.stdout());
            assertThat(p.pid()).isPositive();
            p.signal(signal);
            assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(signal));
            out.get(5, TimeUnit.SECONDS);
        }
        ProcessSpec exit = new ProcessSpec("/bin/sh", List.of("-c", "exit 42"), Optional.empty(), Map.of(),
                Optional.of(new TerminalSize(80, 24)));
        assertThat(collect(sandbox.exec(exit)).status()).isEqualTo(ExitStatus.exited(42));
    }

    @Test
    void closingAPtysStdinIsEndOfFile() throws Exception {
        ProcessSpec spec = new ProcessSpec("cat", List.of(), Optional.empty(), Map.of(),
                Optional.of(new TerminalSize(80, 24)));
        RuntimeProcess p = sandbox.exec(spec);
        var out = LocalTesting.drain(p.stdout());
        p.stdin().write("line\n".getBytes(StandardCharsets.UTF_8));
        p.stdin().close();
        assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
        assertThat(out.get(5, TimeUnit.SECONDS)).contains("line");
    }

    @Test
    void workdirAndEnvironmentAreHonouredAndTheHostsDoNotLeak() throws Exception {
        assertThat(LocalTesting.run(sandbox, command("pwd")).ok().out()).isEqualTo("/workspace\n");
        sh(sandbox, "mkdir -p /workspace/sub/dir").ok();
        ProcessSpec inSub = new ProcessSpec("pwd", List.of(), Optional.of("sub/dir"), Map.of(), Optional.empty());
        assertThat(LocalTesting.run(sandbox, inSub).ok().out()).isEqualTo("/workspace/sub/dir\n");
        ProcessSpec inTmp = new ProcessSpec("pwd", List.of(), Optional.of("/tmp"), Map.of(), Optional.empty());
        assertThat(LocalTesting.run(sandbox, inTmp).ok().out()).isEqualTo("/tmp\n");

        ProcessSpec env = new ProcessSpec("env", List.of(), Optional.empty(),
                Map.of("FROM_EXEC", "e", "SHARED", "exec", "LD_PRELOAD", "/nonexistent.so"), Optional.empty());
        Map<String, String> seen = LocalTesting.run(sandbox, env).out().lines()
                .map(l -> l.split("=", 2)).collect(Collectors.toMap(a -> a[0], a -> a[1]));
        assertThat(seen).containsOnlyKeys("PATH", "HOME", "FROM_SANDBOX", "SHARED", "FROM_EXEC", "LD_PRELOAD")
                .containsEntry("PATH", LocalRuntime.DEFAULT_PATH).containsEntry("HOME", "/root")
                .containsEntry("SHARED", "exec").containsEntry("FROM_SANDBOX", "s");
        // nothing of the server's environment (its PATH, HOME, JAVA_HOME ...) got in
        Set<String> hostOnly = System.getenv().keySet().stream()
                .filter(k -> !Set.of("PATH", "HOME").contains(k)).collect(Collectors.toSet());
        assertThat(hostOnly).isNotEmpty();
        assertThat(seen.keySet()).doesNotContainAnyElementsOf(hostOnly);
    }

    @Test
    void spareHelpersRunCommandsExactlyAsTheDirectPathDoes() throws Exception {
        // the first two execs of a sandbox take the direct path and start spare helpers for the later ones
        assertThat(drained(command("true")).viaSpare()).isFalse();
        assertThat(drained(command("true")).viaSpare()).isFalse();
        String tricky = "a b\n\tc'\"$HOME\\ é =x";
        drained(sh("mkdir -p '/workspace/dir with space'"));
        Map<String, String> env = Map.of("TRICKY", tricky, "EMPTY", "", "EQ", "a=b=c");
        Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            ProcessSpec spec = new ProcessSpec("/bin/sh", List.of("-c",
                    "pwd; printf '[%s]' \"$@\"; echo; printf '%s' \"$TRICKY\" | od -c | head -3; env | sort", "sh", "",
                    tricky, "-x", "--"), Optional.of("dir with space"), env, Optional.empty());
            LocalProcess viaSpare = (LocalProcess) sandbox.exec(spec);
            viaSpare.stdin().close();
            LocalTesting.Run r = collect(viaSpare);
            assertThat(viaSpare.viaSpare()).isTrue();
            ProcessSpec same = new ProcessSpec(spec.command(), spec.args(), spec.workdir(), env,
                    Optional.of(new TerminalSize(500, 50)));
            // the PTY path never uses a spare: compare with it (modulo the terminal's CRLF and TERM)
            LocalTesting.Run direct = collect(sandbox.exec(same));
            assertThat(r.out().lines().filter(l -> !l.startsWith("TERM=")).toList()).isEqualTo(
                    direct.out().replace("\r\n", "\n").lines().filter(l -> !l.startsWith("TERM=")).toList());
            assertThat(r.out()).startsWith("/workspace/dir with space\n[][" + tricky + "][-x][--]\n")
                    .contains("EMPTY=\n").contains("EQ=a=b=c\n").contains("FROM_SANDBOX=s\n");
            assertThat(r.status()).isEqualTo(ExitStatus.exited(0));
        });
        // pid, signals and killTree work on a process that was a spare
        Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            LocalProcess p = (LocalProcess) sandbox.exec(sh("echo $$; sleep 4717 & sleep 4717"));
            try {
                assertThat(p.viaSpare()).isTrue();
                assertThat(readLine(p.stdout())).isEqualTo(Long.toString(p.pid()));
                Awaitility.await().atMost(Duration.ofSeconds(5))
                        .until(() -> LocalTesting.hostProcessesRunning("sleep 4717").size() == 2);
            } finally {
                p.killTree();
            }
            assertThat(LocalTesting.hostProcessesRunning("sleep 4717")).isEmpty();
            assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(9));
        });
        // spares killed from inside are noticed and replaced; execs keep working meanwhile
        Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> LocalTesting.sh(sandbox, "ps -eo args").out().contains("chalk-exec-spare"));
        LocalTesting.sh(sandbox, "pkill -9 -f chalk-exec-spare; true");
        for (int i = 0; i < 5; i++) {
            assertThat(LocalTesting.sh(sandbox, "echo " + i).ok().out()).isEqualTo(i + "\n");
        }
    }

    private LocalProcess drained(ProcessSpec spec) throws Exception {
        LocalProcess p = (LocalProcess) sandbox.exec(spec);
        p.stdin().close();
        collect(p);
        return p;
    }

    @Test
    void aMissingCommandOrWorkdirIsAStartError() throws Exception {
        assertThatThrownBy(() -> sandbox.exec(command("no-such-command-here")))
                .isInstanceOf(ProcessStartException.class)
                .hasMessage("command not found in sandbox: no-such-command-here");
        assertThatThrownBy(() -> sandbox.exec(command("/usr/bin/no-such-command")))
                .isInstanceOf(ProcessStartException.class)
                .hasMessage("command not found in sandbox: /usr/bin/no-such-command");
        // a host program outside the sandbox's view does not count
        Path hostTool = state.resolve("host-tool");
        java.nio.file.Files.writeString(hostTool, "#!/bin/sh\necho host\n");
        hostTool.toFile().setExecutable(true);
        assertThatThrownBy(() -> sandbox.exec(command(hostTool.toString())))
                .isInstanceOf(ProcessStartException.class)
                .hasMessage("command not found in sandbox: " + hostTool);
        ProcessSpec badDir = new ProcessSpec("pwd", List.of(), Optional.of("/no/such/dir"), Map.of(), Optional.empty());
        assertThatThrownBy(() -> sandbox.exec(badDir))
                .isInstanceOf(ProcessStartException.class)
                .hasMessageContaining("/no/such/dir");
        ProcessSpec badEnv = new ProcessSpec("pwd", List.of(), Optional.empty(), Map.of("A=B", "x"), Optional.empty());
        assertThatThrownBy(() -> sandbox.exec(badEnv)).isInstanceOf(ProcessStartException.class);
    }

    @Test
    void commandsAreFoundThroughSymlinksInsideTheSandbox() throws Exception {
        sh(sandbox, "mkdir -p /workspace/bin && ln -s /usr/bin/echo /workspace/bin/say "
                + "&& ln -s ../../workspace/bin /tmp/rel").ok();
        ProcessSpec say = new ProcessSpec("say", List.of("hi"), Optional.empty(),
                Map.of("PATH", "/tmp/rel:/usr/bin"), Optional.empty());
        assertThat(LocalTesting.run(sandbox, say).ok().out()).isEqualTo("hi\n");
    }

    @Test
    void onExitCompletesAfterAllOutputWasDelivered() throws Exception {
        for (int i = 0; i < 5; i++) {
            RuntimeProcess p = sandbox.exec(sh("head -c 3000000 /dev/zero; echo end >&2"));
            java.util.concurrent.atomic.AtomicLong read = new java.util.concurrent.atomic.AtomicLong();
            var out = java.util.concurrent.CompletableFuture.runAsync(() -> {
                byte[] buf = new byte[8192];
                try (InputStream in = p.stdout()) {
                    int n;
                    while ((n = in.read(buf)) >= 0) {
                        read.addAndGet(n);
                    }
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            var err = LocalTesting.drain(p.stderr());
            long readAtExit = p.onExit().thenApply(s -> read.get()).get(20, TimeUnit.SECONDS);
            assertThat(readAtExit).isEqualTo(3_000_000);
            out.get(5, TimeUnit.SECONDS);
            assertThat(err.get(5, TimeUnit.SECONDS)).isEqualTo("end\n");
        }
    }

    @Test
    void aDaemonHoldingTheOutputDoesNotHoldUpOnExit() throws Exception {
        RuntimeProcess p = sandbox.exec(sh("sleep 4714 & echo parent-done"));
        var out = LocalTesting.drain(p.stdout());
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
        assertThat(out).isNotDone();
        sandbox.terminate(Duration.ZERO);
        assertThat(out.get(5, TimeUnit.SECONDS)).isEqualTo("parent-done\n");
    }

    @Test
    void processesOfAStoppedSandboxEnd() throws Exception {
        RuntimeProcess p = sandbox.exec(command("sleep", "4715"));
        assertThat(p.pid()).isPositive();
        sandbox.terminate(Duration.ofSeconds(1));
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(15));
        assertThatThrownBy(() -> sandbox.exec(command("true"))).isInstanceOf(ProcessStartException.class)
                .hasMessageContaining("not running");
        sandbox.terminate(Duration.ZERO); // idempotent
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0 && b != '\n') {
            line.write(b);
        }
        return line.toString(StandardCharsets.UTF_8).trim();
    }

    private static void readUntil(InputStream in, StringBuilder seen, String text) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        byte[] buf = new byte[4096];
        while (!seen.toString().contains(text)) {
            assertThat(System.nanoTime()).as("waiting for %s in %s", text, seen).isLessThan(deadline);
            int n = in.read(buf);
            assertThat(n).as("end of output while waiting for %s in %s", text, seen).isPositive();
            seen.append(new String(buf, 0, n, StandardCharsets.UTF_8));
        }
    }
}
