package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A local sandbox's terminate, in both isolation modes: a sandbox with nothing running stops at once whatever its
 * grace period, a process that ignores SIGTERM gets the whole grace period, and one that handles it gets to clean
 * up, commands of its own included, before the sandbox ends.
 */
@Tag("alone")
class LocalSandboxTerminateTest {

    /** The grace period a client's terminate gets when it names none. */
    private static final Duration DEFAULT_GRACE = Duration.ofSeconds(5);
    /** An idle sandbox stops in tens of milliseconds; this leaves room for a loaded machine, far below the grace. */
    private static final long IDLE_TERMINATE_MILLIS = 1_000;

    @RegisterExtension
    final ModeRuntimes runtimes = new ModeRuntimes();

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void anIdleSandboxStopsAtOnceWhateverItsGracePeriod(String mode) throws Exception {
        LocalRuntime runtime = runtimes.start(mode);
        List<String> slow = new ArrayList<>();
        // as a sandbox-per-request service leaves them: just started (the init starting its keep-alive), after one
        // exec, after several (spare exec helpers starting, then ready), and with its keep-alive killed from inside
        // (the init starts another, and its fork must not be taken for a process to wait for)
        for (int round = 0; round < 3; round++) {
            for (int execs : new int[] {0, 1, 2, 5}) {
                RuntimeSandbox sb = runtime.start(LocalTesting.spec());
                for (int i = 0; i < execs; i++) {
                    assertThat(sh(sb, "echo " + i).ok().out()).isEqualTo(i + "\n");
                }
                long millis = terminateMillis(sb, DEFAULT_GRACE);
                if (millis >= IDLE_TERMINATE_MILLIS) {
                    slow.add(execs + " execs: " + millis + " ms");
                }
            }
            RuntimeSandbox sb = runtime.start(LocalTesting.spec());
            sh(sb, "kill $(pgrep -P 1 -x sleep)").ok();
            long millis = terminateMillis(sb, DEFAULT_GRACE);
            if (millis >= IDLE_TERMINATE_MILLIS) {
                slow.add("keep-alive killed: " + millis + " ms");
            }
        }
        assertThat(slow)
                .as(
                        "terminates of idle sandboxes (grace %s) that took %d ms or more",
                        DEFAULT_GRACE, IDLE_TERMINATE_MILLIS)
                .isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void aProcessThatIgnoresSigtermGetsTheWholeGracePeriod(String mode) throws Exception {
        LocalSandbox sb = (LocalSandbox) runtimes.start(mode).start(LocalTesting.spec());
        RuntimeProcess p = sb.exec(LocalTesting.sh("trap '' TERM; echo ready; exec sleep 4761"));
        BufferedReader out = new BufferedReader(new InputStreamReader(p.stdout(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).isEqualTo("ready");
        long keepAlive = keepAlive(sb);

        CompletableFuture<Long> terminate =
                CompletableFuture.supplyAsync(() -> terminateMillis(sb, Duration.ofMillis(1500)));
        Thread.sleep(700);
        // meanwhile the init's keep-alive is left alone: signalling it would have the init start one after another,
        // each a fresh process to wait for
        assertThat(Procfs.running(keepAlive)).as("the keep-alive still runs").isTrue();
        assertThat(keepAlive(sb)).isEqualTo(keepAlive);

        assertThat(terminate.get(10, TimeUnit.SECONDS)).isBetween(1500L, 1500L + 3_000);
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(9));
        assertThat(LocalTesting.hostProcessesRunning("sleep 4761")).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void aProcessThatHandlesSigtermCleansUpBeforeTheSandboxEnds(String mode) throws Exception {
        RuntimeSandbox sb = runtimes.start(mode).start(LocalTesting.spec());
        // the clean-up runs a command of its own, which must not be signalled in turn
        RuntimeProcess p = sb.exec(LocalTesting.sh(
                "trap 'echo cleaning; sleep 0.5 && echo cleaned; exit 3' TERM; sleep 4762 & echo ready; wait"));
        BufferedReader out = new BufferedReader(new InputStreamReader(p.stdout(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).isEqualTo("ready");
        // a SIGTERM that reaches a fork of the shell before it runs sleep is lost, as with kill -TERM -1
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> LocalTesting.hostProcessesRunning("sleep 4762").size() == 1);

        long millis = terminateMillis(sb, DEFAULT_GRACE);

        assertThat(out.readLine()).isEqualTo("cleaning");
        assertThat(out.readLine()).isEqualTo("cleaned");
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(3));
        // the terminate waited for the clean-up, and no longer
        assertThat(millis).isBetween(500L, DEFAULT_GRACE.toMillis() - 1_000);
        assertThat(LocalTesting.hostProcessesRunning("sleep 4762")).isEmpty();
    }

    /** The host pid of the sleep the sandbox's init keeps as its child. */
    private static long keepAlive(LocalSandbox sb) {
        return ProcessHandle.of(sb.initPid())
                .orElseThrow()
                .children()
                .filter(c -> Procfs.commandLine(c.pid()).endsWith("sleep infinity"))
                .mapToLong(ProcessHandle::pid)
                .findFirst()
                .orElseThrow();
    }

    private static long terminateMillis(RuntimeSandbox sb, Duration grace) {
        long t = System.nanoTime();
        sb.terminate(grace);
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t);
        assertThat(sb.onStopped()).isCompletedWithValue("terminated");
        return millis;
    }
}
