package ai.chalk.compute.autoconfigure.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import com.acme.replica.ReplicaApp;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * A Spring Boot application with work of its own at startup deploys a bean of five functions to the embedded server:
 * the application runs its runner, listener and schedule once, itself; the replica serving the functions (one JVM for
 * the whole bean) runs none of them, makes no bean the functions do not need and has no web server.
 */
@SpringBootTest(
        classes = ReplicaApp.class,
        properties = {"chalk.compute.tui=false", "chalk.compute.functions.wait-on-startup=true"})
class ReplicaStartupTests {

    @Autowired
    ChalkFunctions functions;

    @Autowired
    SandboxClient client;

    @Test
    void theReplicaRunsOnlyTheFunctionsBeanAndOneJvmServesAllItsFunctions() {
        assertThat(functions.functions())
                .allSatisfy(f -> assertThat(f.status())
                        .as(f.name() + ": " + f.error())
                        .isEqualTo(FunctionDeploymentState.Status.DEPLOYED));
        // the application itself: the runner ran once, the listener heard ready once, the schedule ticks
        assertThat(ReplicaApp.RUNNER.get()).isEqualTo(1);
        assertThat(ReplicaApp.READY.get()).isEqualTo(1);
        assertThat(ReplicaApp.WAREHOUSES.get()).isEqualTo(1);
        await().atMost(Duration.ofSeconds(10)).until(() -> ReplicaApp.TICKS.get() > 0);

        long pid = (long) RemoteFunction.fromName(client, "pid").call();
        assertThat(pid).isNotEqualTo(ProcessHandle.current().pid());
        // every function of the bean answers from that same replica JVM
        assertThat(RemoteFunction.fromName(client, "pidAgain").call()).isEqualTo(pid);
        assertThat(RemoteFunction.fromName(client, "echo").call("hi")).isEqualTo("hi");
        assertThat(RemoteFunction.fromName(client, "context").call())
                .isEqualTo("org.springframework.context.annotation.AnnotationConfigApplicationContext");
        // long enough for a 50 ms schedule to have ticked there, had it run
        await().pollDelay(Duration.ofMillis(500)).until(() -> true);
        assertThat(RemoteFunction.fromName(client, "startupWork").call())
                .isEqualTo("runner=0 ready=0 ticks=0 warehouses=0");
        assertThat(RemoteFunction.fromName(client, "pid").call()).isEqualTo(pid);
        // the application's own work still ran once, in the application
        assertThat(ReplicaApp.RUNNER.get()).isEqualTo(1);
        assertThat(ReplicaApp.READY.get()).isEqualTo(1);
    }
}
