package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.RuntimeBehaviourTest;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The shared runtime behaviour on the local runtime (bubblewrap where installed). */
class LocalRuntimeBehaviourTest extends RuntimeBehaviourTest {

    @Override
    protected SandboxRuntime createRuntime(Path state) {
        return new LocalRuntime(state, LocalIsolation.AUTO);
    }

    @Override
    protected Path writableLayer(RuntimeSandbox sandbox) {
        return ((LocalSandbox) sandbox).layer();
    }

    /**
     * A command ended by the terminate's SIGTERM is reported so even when its nsenter, which passes the status on,
     * is slow to run again (a loaded host): the terminate waits for it within the grace period instead of killing
     * it, which would report a SIGKILL.
     */
    @Test
    void aSigtermStaysASigtermWhenNsenterIsSlowToPassItOn() throws Exception {
        RuntimeProcess p = sandbox.exec(RuntimeTesting.command("sleep", "4716"));
        assertThat(p.pid()).isPositive();
        long command = ((LocalProcess) p).hostPid();
        long nsenter = ((LocalProcess) p).hostProcess().pid();
        HostSignals.signal(nsenter, 19); // SIGSTOP: it can neither reap the command nor pass its status on
        CompletableFuture<Void> stopping = CompletableFuture.runAsync(() -> sandbox.terminate(Duration.ofSeconds(20)));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (Procfs.running(command) && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(Procfs.running(command))
                .as("the command ended on its SIGTERM")
                .isFalse();
        Thread.sleep(200); // the terminate sees an empty sandbox meanwhile
        HostSignals.signal(nsenter, 18); // SIGCONT
        stopping.get(20, TimeUnit.SECONDS);
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(15));
    }
}
