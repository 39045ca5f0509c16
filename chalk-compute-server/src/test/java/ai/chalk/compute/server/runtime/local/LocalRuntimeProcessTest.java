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
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Processes in a bubblewrap sandbox, beyond the shared behaviour of {@code RuntimeBehaviourTest}: daemons reached
 * by killTree through the pids cgroup, the exact environment, spare exec helpers.
 */
@Tag("alone")
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
    void killTreeKillsEverythingTheProcessStarted() throws Exception {
        RuntimeProcess p = sandbox.exec(sh("sleep 4712 & setsid sleep 4712 & (setsid sh -c 'sleep 4712 &' &); "
                + "nohup sleep 4712 > /dev/null 2>&1 & echo started; sleep 4712"));
        assertThat(readLine(p.stdout())).isEqualTo("started");
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
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
    void workdirAndEnvironmentAreHonouredAndTheHostsDoNotLeak() throws Exception {
        assertThat(LocalTesting.run(sandbox, command("pwd")).ok().out()).isEqualTo("/workspace\n");
        sh(sandbox, "mkdir -p /workspace/sub/dir").ok();
        ProcessSpec inSub = new ProcessSpec("pwd", List.of(), Optional.of("sub/dir"), Map.of(), Optional.empty());
        assertThat(LocalTesting.run(sandbox, inSub).ok().out()).isEqualTo("/workspace/sub/dir\n");
        ProcessSpec inTmp = new ProcessSpec("pwd", List.of(), Optional.of("/tmp"), Map.of(), Optional.empty());
        assertThat(LocalTesting.run(sandbox, inTmp).ok().out()).isEqualTo("/tmp\n");

        ProcessSpec env = new ProcessSpec(
                "env",
                List.of(),
                Optional.empty(),
                Map.of("FROM_EXEC", "e", "SHARED", "exec", "LD_PRELOAD", "/nonexistent.so"),
                Optional.empty());
        Map<String, String> seen = LocalTesting.run(sandbox, env)
                .out()
                .lines()
                .map(l -> l.split("=", 2))
                .collect(Collectors.toMap(a -> a[0], a -> a[1]));
        assertThat(seen)
                .containsOnlyKeys("PATH", "HOME", "FROM_SANDBOX", "SHARED", "FROM_EXEC", "LD_PRELOAD")
                .containsEntry("PATH", LocalRuntime.DEFAULT_PATH)
                .containsEntry("HOME", "/root")
                .containsEntry("SHARED", "exec")
                .containsEntry("FROM_SANDBOX", "s");
        // nothing of the server's environment (its PATH, HOME, JAVA_HOME ...) got in
        Set<String> hostOnly = System.getenv().keySet().stream()
                .filter(k -> !Set.of("PATH", "HOME").contains(k))
                .collect(Collectors.toSet());
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
            ProcessSpec spec = new ProcessSpec(
                    "/bin/sh",
                    List.of(
                            "-c",
                            "pwd; printf '[%s]' \"$@\"; echo; printf '%s' \"$TRICKY\" | od -c | head -3; env | sort",
                            "sh",
                            "",
                            tricky,
                            "-x",
                            "--"),
                    Optional.of("dir with space"),
                    env,
                    Optional.empty());
            LocalProcess viaSpare = (LocalProcess) sandbox.exec(spec);
            viaSpare.stdin().close();
            LocalTesting.Run r = collect(viaSpare);
            assertThat(viaSpare.viaSpare()).isTrue();
            ProcessSpec same = new ProcessSpec(
                    spec.command(), spec.args(), spec.workdir(), env, Optional.of(new TerminalSize(500, 50)));
            // the PTY path never uses a spare: compare with it (modulo the terminal's CRLF and TERM)
            LocalTesting.Run direct = collect(sandbox.exec(same));
            assertThat(r.out().lines().filter(l -> !l.startsWith("TERM=")).toList())
                    .isEqualTo(direct.out()
                            .replace("\r\n", "\n")
                            .lines()
                            .filter(l -> !l.startsWith("TERM="))
                            .toList());
            assertThat(r.out())
                    .startsWith("/workspace/dir with space\n[][" + tricky + "][-x][--]\n")
                    .contains("EMPTY=\n")
                    .contains("EQ=a=b=c\n")
                    .contains("FROM_SANDBOX=s\n");
            assertThat(r.status()).isEqualTo(ExitStatus.exited(0));
        });
        // pid, signals and killTree work on a process that was a spare
        Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            LocalProcess p = (LocalProcess) sandbox.exec(sh("echo $$; sleep 4717 & sleep 4717"));
            try {
                assertThat(p.viaSpare()).isTrue();
                assertThat(readLine(p.stdout())).isEqualTo(Long.toString(p.pid()));
                Awaitility.await()
                        .atMost(Duration.ofSeconds(5))
                        .until(() ->
                                LocalTesting.hostProcessesRunning("sleep 4717").size() == 2);
            } finally {
                p.killTree();
            }
            assertThat(LocalTesting.hostProcessesRunning("sleep 4717")).isEmpty();
            assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(9));
        });
        // spares killed from inside are noticed and replaced; execs keep working meanwhile
        Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .until(() -> LocalTesting.sh(sandbox, "ps -eo args").out().contains("chalk-exec-spare"));
        LocalTesting.sh(sandbox, "pkill -9 -f chalk-exec-spare; true");
        for (int i = 0; i < 5; i++) {
            assertThat(LocalTesting.sh(sandbox, "echo " + i).ok().out()).isEqualTo(i + "\n");
        }
    }

    @Test
    void anExecsStdoutPipeIsGrownAndItsStderrIsTheCommandsAloneOnBothPaths() throws Exception {
        // F_GETPIPE_SZ (1032) on stdout, and one byte on stderr: a spare's ready byte must not show up there. The
        // growth is best effort: where the server's user has spent its pipe budget (fs.pipe-user-pages-soft, shared by
        // every process of that user on the host) the kernel leaves the default 64 KiB
        String[] sizes = {Integer.toString(SandboxCommands.STDOUT_PIPE), Integer.toString(65536)};
        ProcessSpec probe = command("perl", "-e", "print fcntl(STDOUT, 1032, 0) + 0; print STDERR 'e'");
        LocalProcess direct = (LocalProcess) sandbox.exec(probe);
        direct.stdin().close();
        LocalTesting.Run first = collect(direct);
        assertThat(direct.viaSpare()).isFalse();
        assertThat(first.out()).isIn((Object[]) sizes);
        assertThat(first.err()).isEqualTo("e");
        drained(command("true")); // the second exec leaves spare helpers starting
        Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            LocalProcess spare = (LocalProcess) sandbox.exec(probe);
            spare.stdin().close();
            LocalTesting.Run r = collect(spare);
            assertThat(spare.viaSpare()).isTrue();
            assertThat(r.out()).isIn((Object[]) sizes);
            assertThat(r.err()).isEqualTo("e");
            assertThat(r.status()).isEqualTo(ExitStatus.exited(0));
        });
    }

    /**
     * What a command leaves behind writes into its output after the command has ended, on both paths, however late
     * the server starts reading. The JDK closed its pipes as the host process exited unless a reader was already
     * blocked on them, and the server's readers start a few milliseconds after the command: when the command was
     * quicker, the leftover's output was lost and it died of SIGPIPE at its first write (a flaky count of places held in
     * RunningCommandsSecurityTest, CI111).
     */
    @Test
    void whatACommandLeavesBehindWritesToItsOutputAfterTheCommandEndedOnBothPaths() throws Exception {
        LocalProcess direct = leavingALateWriter();
        assertThat(direct.viaSpare()).isFalse();
        assertLeftoverWrote(direct);
        drained(command("true")); // the second exec leaves spare helpers starting
        Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            LocalProcess spare = leavingALateWriter();
            try {
                assertThat(spare.viaSpare()).isTrue();
            } finally {
                assertLeftoverWrote(spare);
            }
        });
    }

    private int lateWriters;

    /** A command that ends at once, leaving behind a process that writes to its output half a second later. */
    private LocalProcess leavingALateWriter() throws Exception {
        lateWriters++;
        return (LocalProcess) sandbox.exec(
                sh("(sleep 0.5; echo late; echo late-err >&2; touch /tmp/wrote-" + lateWriters + ") & echo early"));
    }

    /** Reads {@code p}'s output only well after it ended: the leftover's lines are there, and it lived on. */
    private void assertLeftoverWrote(LocalProcess p) throws Exception {
        p.stdin().close();
        assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
        Thread.sleep(100); // the command ended a while ago, and no one has read its output yet
        LocalTesting.Run r = collect(p);
        String which = p.viaSpare() ? "via a spare" : "direct";
        assertThat(r.out()).as(which).isEqualTo("early\nlate\n");
        assertThat(r.err()).as(which).isEqualTo("late-err\n");
        assertThat(LocalTesting.sh(sandbox, "ls /tmp/wrote-" + lateWriters).out())
                .as(which)
                .isNotBlank();
    }

    private LocalProcess drained(ProcessSpec spec) throws Exception {
        LocalProcess p = (LocalProcess) sandbox.exec(spec);
        p.stdin().close();
        collect(p);
        return p;
    }

    /** (Missing commands and working directories in general: {@code RuntimeBehaviourTest}.) */
    @Test
    void aHostProgramOutsideTheSandboxsViewIsNotFound() throws Exception {
        Path hostTool = state.resolve("host-tool");
        java.nio.file.Files.writeString(hostTool, "#!/bin/sh\necho host\n");
        hostTool.toFile().setExecutable(true);
        assertThatThrownBy(() -> sandbox.exec(command(hostTool.toString())))
                .isInstanceOf(ProcessStartException.class)
                .hasMessage("command not found in sandbox: " + hostTool);
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0 && b != '\n') {
            line.write(b);
        }
        return line.toString(StandardCharsets.UTF_8).trim();
    }
}
