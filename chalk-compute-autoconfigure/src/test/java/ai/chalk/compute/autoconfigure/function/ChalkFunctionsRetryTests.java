package ai.chalk.compute.autoconfigure.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.endpoint.ChalkFunctionsEndpoint;
import ai.chalk.compute.autoconfigure.endpoint.ChalkFunctionsEndpointAutoConfiguration;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState.Status;
import ai.chalk.compute.autoconfigure.health.ChalkComputeHealthAutoConfiguration;
import ai.chalk.compute.autoconfigure.health.ChalkComputeHealthIndicator;
import ai.chalk.compute.autoconfigure.health.ChalkFunctionsHealthAutoConfiguration;
import ai.chalk.compute.autoconfigure.health.ChalkFunctionsHealthContributor;
import ai.chalk.compute.autoconfigure.progress.ChalkComputeProgressAutoConfiguration;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import com.acme.functions.WorkerApp;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * An application started before its server: its functions wait with backoff, visible in health and the endpoint,
 * and deploy by themselves once a real server listens on the port the application points at.
 */
@ExtendWith(OutputCaptureExtension.class)
class ChalkFunctionsRetryTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    ChalkComputeProgressAutoConfiguration.class,
                    ChalkComputeHealthAutoConfiguration.class,
                    ChalkFunctionsAutoConfiguration.class,
                    ChalkFunctionsHealthAutoConfiguration.class,
                    ChalkFunctionsEndpointAutoConfiguration.class))
            .withPropertyValues(
                    "management.endpoints.web.exposure.include=health,chalkfunctions",
                    "chalk.compute.tui=true",
                    "chalk.compute.color=never",
                    "chalk.compute.functions.retry.initial-backoff=200ms",
                    "chalk.compute.functions.retry.max-backoff=1s");

    @Test
    void functionsOfAnApplicationStartedBeforeItsServerRetryAndDeployOnceTheServerIsUp(
            @TempDir Path dataDir, CapturedOutput output) throws Exception {
        int port = freePort();
        String target = "localhost:" + port;
        runner.withUserConfiguration(WorkerApp.class)
                .withPropertyValues("chalk.compute.target=" + target)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    ChalkFunctions functions = context.getBean(ChalkFunctions.class);
                    ChalkFunctionsEndpoint endpoint = context.getBean(ChalkFunctionsEndpoint.class);
                    HealthIndicator greetHealth =
                            (HealthIndicator) context.getBean(ChalkFunctionsHealthContributor.class)
                                    .getContributor("greet");

                    // no server yet: each function waits to try again, saying why and where
                    await().atMost(Duration.ofSeconds(30))
                            .untilAsserted(() -> assertThat(functions.functions())
                                    .allSatisfy(f -> {
                                        assertThat(f.status()).isEqualTo(Status.RETRYING);
                                        assertThat(f.attempts()).isGreaterThanOrEqualTo(2);
                                    }));
                    ChalkFunctionsEndpoint.FunctionDescriptor waiting = endpoint.function("greet");
                    assertThat(waiting.status()).isEqualTo("RETRYING");
                    assertThat(waiting.error()).isEqualTo("UNAVAILABLE: connection refused to " + target);
                    assertThat(waiting.attempts()).isGreaterThanOrEqualTo(2);
                    assertThat(Instant.parse(waiting.nextAttempt()))
                            .isBefore(Instant.now().plusSeconds(2)); // the backoff is capped at 1s
                    assertThat(greetHealth.health().getStatus())
                            .isEqualTo(org.springframework.boot.health.contributor.Status.DOWN);
                    assertThat(greetHealth.health().getDetails())
                            .containsEntry("status", "RETRYING")
                            .containsEntry("error", "UNAVAILABLE: connection refused to " + target)
                            .containsKeys("attempts", "nextAttempt");
                    assertThat(context.getBean(ChalkComputeHealthIndicator.class)
                                    .health()
                                    .getStatus())
                            .isEqualTo(org.springframework.boot.health.contributor.Status.DOWN);

                    // the server starts, after the application, on the port it points at
                    try (ComputeServer server = ComputeServer.builder()
                            .dataDir(dataDir)
                            .port(port)
                            .httpPort(0)
                            .auth(Authentication.Mode.NONE)
                            .build()
                            .start()) {
                        await().atMost(Duration.ofMinutes(2))
                                .untilAsserted(() -> assertThat(functions.functions())
                                        .allSatisfy(f -> assertThat(f.status())
                                                .as(f.name() + ": " + f.error())
                                                .isEqualTo(Status.DEPLOYED)));
                        assertThat(functions.function("greet").orElseThrow().version())
                                .isEqualTo(1);
                        assertThat(greetHealth.health().getStatus())
                                .isEqualTo(org.springframework.boot.health.contributor.Status.UP);
                        assertThat(context.getBean(ChalkComputeHealthIndicator.class)
                                        .health()
                                        .getStatus())
                                .isEqualTo(org.springframework.boot.health.contributor.Status.UP);
                        assertThat(RemoteFunction.fromName(context.getBean(SandboxClient.class), "greet")
                                        .call("Ada"))
                                .isEqualTo("Welcome, Ada");

                        // the write operation redeploys now: nothing changed, so every version is reused
                        ChalkFunctionsEndpoint.RedeployDescriptor all = endpoint.redeploy();
                        assertThat(all.redeploying())
                                .containsExactlyInAnyOrder("greet", "fraudScore", "exact", "Embedder.embed");
                        assertThat(all.notRedeployed()).isEmpty();
                        await().atMost(Duration.ofMinutes(1))
                                .untilAsserted(() -> assertThat(endpoint.function("greet"))
                                        .satisfies(f -> {
                                            assertThat(f.status()).isEqualTo("DEPLOYED");
                                            assertThat(f.version()).isEqualTo(1);
                                            assertThat(f.reused()).isTrue();
                                        }));
                        // the others may still be redeploying, and one under way is not redeployed again
                        await().atMost(Duration.ofMinutes(1))
                                .untilAsserted(() -> assertThat(functions.functions())
                                        .allSatisfy(f -> assertThat(f.status()).isEqualTo(Status.DEPLOYED)));
                        ChalkFunctionsEndpoint.RedeployDescriptor one = endpoint.redeployOne("exact");
                        assertThat(one.redeploying()).containsExactly("exact");
                        assertThat(endpoint.redeployOne("nothing")).isNull();
                        await().atMost(Duration.ofMinutes(1))
                                .until(() -> endpoint.function("exact").status().equals("DEPLOYED"));
                    }
                });
        // the wait is one progress line per function however many tries it takes, and the outcome says reused
        String waitLine = "› Waiting for the server: UNAVAILABLE: connection refused to " + target + "\n";
        assertThat(output.getErr().split(java.util.regex.Pattern.quote(waitLine), -1))
                .as("one waiting line for each of the 4 functions")
                .hasSize(5);
        assertThat(output.getErr())
                .contains("Function \"greet\"")
                .contains("✓ Deployed version 1")
                .contains("✓ Reused version 1");
        assertThat(output)
                .contains("Chalk function greet could not be deployed, retrying with backoff up to PT1S: "
                        + "UNAVAILABLE: connection refused to " + target);
    }

    @Test
    void theBackoffDoublesUpToItsMaximum() {
        RetryBackoff backoff = new RetryBackoff(Duration.ofMillis(200), Duration.ofSeconds(1));
        assertThat(backoff.delay(1)).isEqualTo(Duration.ofMillis(200));
        assertThat(backoff.delay(2)).isEqualTo(Duration.ofMillis(400));
        assertThat(backoff.delay(3)).isEqualTo(Duration.ofMillis(800));
        assertThat(backoff.delay(4)).isEqualTo(Duration.ofSeconds(1));
        assertThat(backoff.delay(1000)).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void retriesCanBeSwitchedOffThenAnUnreachableServerFailsTheFunction() throws Exception {
        String target = "localhost:" + freePort();
        runner.withUserConfiguration(WorkerApp.class)
                .withPropertyValues("chalk.compute.target=" + target, "chalk.compute.functions.retry.enabled=false")
                .run(context -> {
                    ChalkFunctionsDeployment deployment = context.getBean(ChalkFunctionsDeployment.class);
                    assertThat(deployment.awaitDeployments(Duration.ofMinutes(1)))
                            .isTrue();
                    assertThat(context.getBean(ChalkFunctions.class).functions())
                            .allSatisfy(f -> {
                                assertThat(f.status()).isEqualTo(Status.FAILED);
                                assertThat(f.error()).isEqualTo("UNAVAILABLE: connection refused to " + target);
                            });
                });
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
