package ai.chalk.compute.autoconfigure.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.autoconfigure.endpoint.ChalkFunctionsLogsWebExtension;
import ai.chalk.compute.function.deploy.FunctionLogLine;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import com.acme.replica.ReplicaApp;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * A Spring Boot application with work of its own at startup deploys a bean of five functions to the embedded server:
 * the application runs its runner, listener and schedule once, itself; the replica serving the functions (one JVM for
 * the whole bean) runs none of them, makes no bean the functions do not need and has no web server.
 */
@SpringBootTest(
        classes = ReplicaApp.class,
        properties = {
            "chalk.compute.tui=false",
            "chalk.compute.functions.wait-on-startup=true",
            "management.endpoints.web.exposure.include=chalkfunctions"
        })
@ExtendWith(OutputCaptureExtension.class)
class ReplicaStartupTests {

    @Autowired
    ChalkFunctions functions;

    @Autowired
    SandboxClient client;

    @Autowired
    ChalkFunctionsLogsWebExtension logsEndpoint;

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
        assertThat(ReplicaApp.CONSUMERS_STARTED.get()).isEqualTo(1);
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
                .isEqualTo("runner=0 ready=0 ticks=0 warehouses=0 consumers=0");
        assertThat(RemoteFunction.fromName(client, "pid").call()).isEqualTo(pid);
        // the application's own work still ran once, in the application
        assertThat(ReplicaApp.RUNNER.get()).isEqualTo(1);
        assertThat(ReplicaApp.READY.get()).isEqualTo(1);
    }

    @Test
    void whatAFunctionLogsAndPrintsIsInTheServersLogWithItsReplicaAndComesBackByName(CapturedOutput output) {
        assertThat(RemoteFunction.fromName(client, "chatty").call("tea")).isEqualTo(3);

        // the embedded server's log is the application's: each line named after the function and the replica
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(output.getOut())
                        .containsPattern("\\[chatty fnw-[0-9a-f-]+\\] .*INFO .*logged tea")
                        .containsPattern("\\[chatty fnw-[0-9a-f-]+\\] printed tea")
                        .containsPattern("\\[chatty fnw-[0-9a-f-]+\\] unfinished tea"));

        List<FunctionLogLine> lines = client.functions().logs("chatty");
        List<FunctionLogLine> own = lines.stream()
                .filter(l -> l.function().equals(Optional.of("chatty")))
                .toList();
        assertThat(own)
                .extracting(FunctionLogLine::text)
                .anySatisfy(t -> assertThat(t).contains("INFO").endsWith("logged tea"));
        assertThat(own).extracting(FunctionLogLine::text).contains("printed tea", "unfinished tea");
        assertThat(own)
                .filteredOn(l -> l.text().equals("unfinished tea"))
                .extracting(FunctionLogLine::stream)
                .containsExactly("stderr");
        // the replica's own start (Spring Boot's log) belongs to every function of the bean, oldest first
        assertThat(lines.get(0).function()).isEmpty();
        assertThat(client.functions().logs("pid"))
                .extracting(FunctionLogLine::text)
                .doesNotContain("printed tea")
                .anySatisfy(t -> assertThat(t).contains("Started ReplicaApp"));

        // the actuator's /actuator/chalkfunctions/chatty/logs
        WebEndpointResponse<Object> response = logsEndpoint.logs("chatty", "logs", 2);
        assertThat(response.getStatus()).isEqualTo(200);
        ChalkFunctionsLogsWebExtension.LogsDescriptor body =
                (ChalkFunctionsLogsWebExtension.LogsDescriptor) response.getBody();
        assertThat(body.lines()).hasSize(2).last().satisfies(l -> {
            assertThat(l.function()).isEqualTo("chatty");
            assertThat(l.replica()).startsWith("fnw-");
        });
        assertThat(logsEndpoint.logs("nosuch", "logs", null).getStatus()).isEqualTo(404);
        assertThat(logsEndpoint.logs("chatty", "other", null).getStatus()).isEqualTo(404);
        assertThat(logsEndpoint.logs("chatty", "logs", 5000).getStatus()).isEqualTo(400);
    }
}
