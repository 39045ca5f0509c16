package ai.chalk.compute.autoconfigure.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState.Status;
import ai.chalk.compute.autoconfigure.health.ChalkFunctionsHealthAutoConfiguration;
import ai.chalk.compute.autoconfigure.health.ChalkFunctionsHealthContributor;
import ai.chalk.compute.autoconfigure.progress.ChalkComputeProgressAutoConfiguration;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.progress.ColorMode;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressMode;
import ai.chalk.compute.progress.ProgressSettings;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import com.acme.brokenworker.BrokenWorkerApp;
import com.acme.functions.Fraud;
import com.acme.functions.Greeting;
import com.acme.functions.WorkerApp;
import com.acme.secretenv.SecretEnvApp;
import com.acme.secrets.SecretApp;
import com.acme.warm.WarmApp;
import com.acme.workspaces.WorkspaceApp;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.DefaultApplicationArguments;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.context.event.ApplicationStartedEvent;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Background deployment against the real embedded server: workers are real sandboxes of its local runtime, each
 * booting the application in {@code spring:} worker mode from a snapshot of this test's class path.
 */
@ExtendWith(OutputCaptureExtension.class)
class ChalkFunctionsDeploymentTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    EmbeddedComputeServerAutoConfiguration.class,
                    ChalkComputeProgressAutoConfiguration.class,
                    ChalkFunctionsAutoConfiguration.class,
                    ChalkFunctionsHealthAutoConfiguration.class))
            .withPropertyValues("chalk.compute.tui=false");

    @Test
    void deploysFunctionsAndAScorerInTheBackgroundAndCallsThemByName() {
        // WorkerApp is the application the workers boot; its beans are two functions, a scorer and a class method
        runner.withUserConfiguration(WorkerApp.class)
                .withPropertyValues("chalk.compute.functions.wait-on-startup=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    ChalkFunctions functions = context.getBean(ChalkFunctions.class);
                    assertThat(functions.functions())
                            .extracting(FunctionDeploymentState::name)
                            .containsExactlyInAnyOrder("greet", "fraudScore", "exact", "Embedder.embed");
                    assertThat(functions.functions()).allSatisfy(f -> {
                        assertThat(f.status()).as(f.name() + ": " + f.error()).isEqualTo(Status.DEPLOYED);
                        assertThat(f.version()).isEqualTo(1);
                    });
                    HealthIndicator greetHealth =
                            (HealthIndicator) context.getBean(ChalkFunctionsHealthContributor.class)
                                    .getContributor("greet");
                    assertThat(greetHealth.health().getStatus())
                            .isEqualTo(org.springframework.boot.health.contributor.Status.UP);
                    assertThat(greetHealth.health().getDetails())
                            .containsEntry("version", 1)
                            .containsEntry("replicas", "ready"); // it scales from zero: ready once deployed

                    SandboxClient client = context.getBean(SandboxClient.class);
                    FunctionRegistry registry = functions.registry();
                    // "Welcome" comes from the worker application's Greeting bean: the worker booted the application
                    assertThat(RemoteFunction.fromName(
                                            client, registry.get("greet").definition())
                                    .call("Ada"))
                            .isEqualTo("Welcome, Ada");
                    assertThat(RemoteFunction.fromName(
                                            client, registry.get("fraudScore").definition())
                                    .call("abcdef", 4))
                            .isEqualTo(1.0);
                    assertThat(RemoteFunction.fromName(
                                            client, registry.get("exact").definition())
                                    .call("yes", "yes"))
                            .isEqualTo(1.0);
                    assertThat(RemoteFunction.fromName(
                                            client,
                                            registry.get("Embedder.embed").definition())
                                    .call("abc"))
                            .isEqualTo(List.of(3.0f));
                });
    }

    @Test
    void underASpringApplicationTheDeploymentBeginsOnceTheApplicationIsReady() {
        underSpringApplication().run(context -> {
            assertThat(context).hasNotFailed();
            ChalkFunctions functions = context.getBean(ChalkFunctions.class);
            // the context is refreshed, its lifecycle started: nothing is deployed while the startup goes on
            assertStillDiscoveredAfter(functions, Duration.ofMillis(500));
            context.getSourceApplicationContext()
                    .publishEvent(new ApplicationReadyEvent(
                            new SpringApplication(),
                            new String[0],
                            context.getSourceApplicationContext(),
                            Duration.ZERO));
            awaitDeployed(functions);
        });
    }

    @Test
    void runnersThatWorkOnDoNotHoldTheDeploymentBackPastTheGrace() {
        underSpringApplication().run(context -> {
            assertThat(context).hasNotFailed();
            ChalkFunctions functions = context.getBean(ChalkFunctions.class);
            // their signatures read first (on a busy machine a first reading can take a second), so that the look
            // after the event below is over long before the grace
            assertThat(functions.functions()).isNotEmpty();
            // started, its runners working: no ApplicationReadyEvent comes
            context.getSourceApplicationContext()
                    .publishEvent(new ApplicationStartedEvent(
                            new SpringApplication(),
                            new String[0],
                            context.getSourceApplicationContext(),
                            Duration.ZERO));
            assertStillDiscoveredAfter(functions, ChalkFunctionsDeployment.RUNNERS_GRACE.dividedBy(4));
            awaitDeployed(functions);
        });
    }

    @Test
    void waitingForADeploymentBeforeTheApplicationIsReadyBeginsIt() {
        underSpringApplication().run(context -> {
            // as an evaluation of the application's functions does, early in the startup
            ChalkFunctions functions = context.getBean(ChalkFunctions.class);
            FunctionDeploymentState greet =
                    functions.awaitDeployment("greet", Duration.ofMinutes(3)).orElseThrow();
            assertThat(greet.status()).as(String.valueOf(greet.error())).isEqualTo(Status.DEPLOYED);
            assertThat(context.getBean(ChalkFunctionsDeployment.class).awaitDeployments(Duration.ofMinutes(3)))
                    .isTrue();
            assertThat(functions.functions())
                    .extracting(FunctionDeploymentState::status)
                    .containsOnly(Status.DEPLOYED);
        });
    }

    /** The worker application's context as a {@code SpringApplication} runs it, its events published by the test. */
    private ApplicationContextRunner underSpringApplication() {
        // what SpringApplication registers before the refresh, and a plain context lacks
        return runner.withUserConfiguration(WorkerApp.class)
                .withInitializer(context -> context.getBeanFactory()
                        .registerSingleton("springApplicationArguments", new DefaultApplicationArguments()));
    }

    private static void assertStillDiscoveredAfter(ChalkFunctions functions, Duration pause)
            throws InterruptedException {
        Thread.sleep(pause.toMillis());
        assertThat(functions.functions())
                .extracting(FunctionDeploymentState::status)
                .containsOnly(Status.DISCOVERED);
    }

    private static void awaitDeployed(ChalkFunctions functions) {
        await().atMost(Duration.ofMinutes(3))
                .untilAsserted(() -> assertThat(functions.functions())
                        .extracting(FunctionDeploymentState::status)
                        .containsOnly(Status.DEPLOYED));
    }

    @Test
    void aBeanFunctionCreatesASandboxThroughTheServerRunningItsWorkerAndTheCallerGetsAWorkingHandle() {
        runner.withUserConfiguration(WorkspaceApp.class)
                .withPropertyValues("chalk.compute.functions.wait-on-startup=true")
                .run(context -> {
                    FunctionDeploymentState state = context.getBean(ChalkFunctions.class)
                            .function("workspace")
                            .orElseThrow();
                    assertThat(state.status()).as(String.valueOf(state.error())).isEqualTo(Status.DEPLOYED);
                    SandboxClient client = context.getBean(SandboxClient.class);

                    // by name alone, as another process would call it: the catalog's schema says it returns a Sandbox
                    Sandbox sandbox = (Sandbox)
                            RemoteFunction.fromName(client, "workspace").call("atlas");
                    try {
                        assertThat(sandbox.info().name()).contains("workspace-atlas");
                        assertThat(sandbox.files().readText("/tmp/atlas/README"))
                                .isEqualTo("project atlas\n");
                    } finally {
                        sandbox.terminate();
                    }
                });
    }

    @Test
    void aDeployedFunctionShowsTheReadinessStepsOfAPlainAwaitReadyUntilItsReplicasServe() {
        ByteArrayOutputStream shown = new ByteArrayOutputStream();
        runner.withUserConfiguration(WarmApp.class)
                .withBean(ProgressDisplay.class, () -> plainDisplay(shown))
                .withPropertyValues("chalk.compute.functions.wait-on-startup=true")
                .run(context -> {
                    FunctionDeploymentState echo = context.getBean(ChalkFunctions.class)
                            .function("echo")
                            .orElseThrow();
                    assertThat(echo.status()).as(String.valueOf(echo.error())).isEqualTo(Status.DEPLOYED);
                    // the deployment is done; its group goes on until the warm replica serves
                    await().atMost(Duration.ofSeconds(120))
                            .until(() -> shown.toString(StandardCharsets.UTF_8).contains("└"));
                    String lines = shown.toString(StandardCharsets.UTF_8);
                    assertThat(lines)
                            .as("the lines of ReadinessWait (a plain-Java awaitReady) after the deployment's own")
                            .startsWith("Function \"echo\"\n"
                                    + "  │ › Deploying\n"
                                    + "  │ ✓ Deployed version 1\n"
                                    + "  │ › Waiting for readiness\n")
                            .contains("  │ › Waiting for replicas 0/1")
                            .endsWith("  └ ✓ Ready (1/1 replicas)\n");
                    assertThat(RemoteFunction.fromName(context.getBean(SandboxClient.class), "echo")
                                    .call("warm"))
                            .isEqualTo("warm");
                });
    }

    /** The progress display in plain lines, as on a console that is not a terminal, written to {@code shown}. */
    private static ProgressDisplay plainDisplay(ByteArrayOutputStream shown) {
        return ProgressDisplay.of(
                ProgressSettings.fromEnv(Map.of("TERM", "dumb"))
                        .withTerminal(false)
                        .overriddenBy(ProgressMode.ON, ColorMode.NEVER),
                new PrintStream(shown, true, StandardCharsets.UTF_8));
    }

    @Test
    void aFunctionWhoseWorkersCannotBootIsDeployedButDownWithTheWorkersError() {
        ByteArrayOutputStream shown = new ByteArrayOutputStream();
        runner.withUserConfiguration(BrokenWorkerApp.class)
                .withBean(ProgressDisplay.class, () -> plainDisplay(shown))
                .withPropertyValues("chalk.compute.functions.wait-on-startup=true")
                .run(context -> {
                    FunctionDeploymentState ping = context.getBean(ChalkFunctions.class)
                            .function("ping")
                            .orElseThrow();
                    assertThat(ping.status()).as(String.valueOf(ping.error())).isEqualTo(Status.DEPLOYED);
                    HealthIndicator health = (HealthIndicator) context.getBean(ChalkFunctionsHealthContributor.class)
                            .getContributor("ping");
                    await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> {
                        var h = health.health();
                        assertThat(h.getStatus()).isEqualTo(org.springframework.boot.health.contributor.Status.DOWN);
                        assertThat(h.getDetails()).containsEntry("readyReplicas", 0);
                        assertThat(String.valueOf(h.getDetails().get("message")))
                                .contains("ledger database unreachable from the worker");
                    });
                    // the progress display says the same, as the readiness steps of a plain awaitReady do
                    await().atMost(Duration.ofSeconds(30))
                            .untilAsserted(() -> assertThat(shown.toString(StandardCharsets.UTF_8))
                                    .contains("  │ ✓ Deployed version 1\n  │ › Waiting for readiness\n")
                                    .contains("ledger database unreachable from the worker"));
                });
    }

    @Test
    void aDeploymentTheServerRefusesIsDownWithTheServersMessageLoggedAtTheMethodAndShownOnTheProgressDisplay(
            CapturedOutput output) {
        runner.withUserConfiguration(SecretApp.class)
                .withPropertyValues(
                        "chalk.compute.tui=true",
                        "chalk.compute.color=never",
                        "chalk.compute.functions.wait-on-startup=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    FunctionDeploymentState token = context.getBean(ChalkFunctions.class)
                            .function("token")
                            .orElseThrow();
                    assertThat(token.status()).isEqualTo(Status.FAILED);
                    assertThat(token.error())
                            .isEqualTo("FAILED_PRECONDITION: spec.container_spec.secret_refs[0]: secret"
                                    + " API_KEY does not exist in this environment; create it (UpsertSecret) or remove the"
                                    + " reference");
                    HealthIndicator health = (HealthIndicator) context.getBean(ChalkFunctionsHealthContributor.class)
                            .getContributor("token");
                    assertThat(health.health().getStatus())
                            .isEqualTo(org.springframework.boot.health.contributor.Status.DOWN);
                    assertThat(health.health().getDetails()).containsEntry("error", token.error());
                });
        assertThat(output)
                .containsPattern("ERROR .*Chalk function token failed to deploy: FAILED_PRECONDITION: "
                        + "spec.container_spec.secret_refs\\[0\\]: secret API_KEY does not exist in this environment")
                .containsPattern("\tat com\\.acme\\.secrets\\.SecretApp\\$Tokens\\.token\\(SecretApp\\.java:\\d+\\)")
                .doesNotContain("at ai.chalk.compute")
                // the progress display: one group per function, ending with the server's message
                .contains("Function \"token\"")
                .contains("Deploying")
                .contains("✗ FAILED_PRECONDITION: spec.container_spec.secret_refs[0]");
    }

    @Test
    void aFunctionBeanGetsTheSecretItNamesAndNothingPrintsIt(@TempDir Path dataDir, CapturedOutput output)
            throws Exception {
        String value = "k-" + java.util.UUID.randomUUID();
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).build().start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            client.secrets().upsert("API_KEY", value);
        }
        runner.withUserConfiguration(SecretEnvApp.class)
                .withPropertyValues(
                        "chalk.compute.functions.wait-on-startup=true", "chalk.compute.embedded.data-dir=" + dataDir)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    FunctionDeploymentState apiKey = context.getBean(ChalkFunctions.class)
                            .function("apiKey")
                            .orElseThrow();
                    assertThat(apiKey.status())
                            .as(String.valueOf(apiKey.error()))
                            .isEqualTo(Status.DEPLOYED);
                    assertThat(RemoteFunction.fromName(context.getBean(SandboxClient.class), "apiKey")
                                    .call("key:"))
                            .isEqualTo("key:" + value);
                });
        assertThat(output).doesNotContain(value);
    }

    @Test
    void withoutAnApplicationClassForWorkersEachFunctionFailsWithAnErrorAtItsMethod(CapturedOutput output) {
        runner.withUserConfiguration(NoApplicationClass.class).run(context -> {
            assertThat(context).hasNotFailed();
            ChalkFunctionsDeployment deployment = context.getBean(ChalkFunctionsDeployment.class);
            assertThat(deployment.awaitDeployments(Duration.ofMinutes(1))).isTrue();
            FunctionDeploymentState greet =
                    context.getBean(ChalkFunctions.class).function("greet").orElseThrow();
            assertThat(greet.status()).isEqualTo(Status.FAILED);
            assertThat(greet.error()).contains("no @SpringBootApplication");
            HealthIndicator health = (HealthIndicator)
                    context.getBean(ChalkFunctionsHealthContributor.class).getContributor("greet");
            assertThat(health.health().getStatus()).isEqualTo(org.springframework.boot.health.contributor.Status.DOWN);
        });
        assertThat(output)
                .containsPattern("ERROR .*Chalk function greet failed to deploy: .*no @SpringBootApplication")
                .containsPattern("\tat com\\.acme\\.functions\\.Fraud\\.greet\\(Fraud\\.java:\\d+\\)")
                .doesNotContain("at ai.chalk.compute");
    }

    @Test
    void notDeployedWhenSwitchedOffOrInWorkerMode() {
        runner.withUserConfiguration(NoApplicationClass.class)
                .withPropertyValues("chalk.compute.functions.deploy=false")
                .run(context -> {
                    assertThat(context).doesNotHaveBean(ChalkFunctionsDeployment.class);
                    assertThat(context.getBean(ChalkFunctions.class).function("greet"))
                            .get()
                            .extracting(FunctionDeploymentState::status)
                            .isEqualTo(Status.DISCOVERED);
                });
        runner.withUserConfiguration(NoApplicationClass.class)
                .withPropertyValues("chalk.compute.functions.worker=true", "chalk.compute.embedded.enabled=false")
                .run(context -> assertThat(context)
                        .doesNotHaveBean(ChalkFunctionsDeployment.class)
                        .hasSingleBean(ChalkFunctions.class));
    }

    /** A blank target is no target, for every decision that asks (a worker with one gets no client, as with none). */
    @Test
    void aWorkerWithABlankTargetHasNoClientAsWithNone() {
        runner.withUserConfiguration(NoApplicationClass.class)
                .withPropertyValues(
                        "chalk.compute.functions.worker=true",
                        "chalk.compute.embedded.enabled=false",
                        "chalk.compute.target= ")
                .run(context -> assertThat(context)
                        .hasNotFailed()
                        .doesNotHaveBean(ai.chalk.compute.sandbox.SandboxClient.class)
                        .hasSingleBean(ChalkFunctions.class));
    }

    @Test
    void deployOnlyExitsWithZeroWhenEveryFunctionIsDeployed() {
        runner.withUserConfiguration(WorkerApp.class)
                .withPropertyValues("chalk.compute.functions.deploy-only=true")
                .run(context -> {
                    DeployOnlyRun run = deployOnly(context.getSourceApplicationContext());
                    assertThat(run.status()).isEqualTo(0);
                    assertThat(run.summary())
                            .startsWith("Chalk functions: 4 deployed, 0 failed")
                            .containsPattern("  ✓ greet +version 1")
                            .containsPattern("  ✓ exact +version 1");
                });
    }

    @Test
    void deployOnlyExitsWithOneWhenAnyFunctionFailedAndClosesTheApplication() {
        runner.withUserConfiguration(NoApplicationClass.class)
                .withPropertyValues("chalk.compute.functions.deploy-only=true")
                .run(context -> {
                    assertThat(context).hasSingleBean(ChalkFunctionsDeployOnly.class);
                    DeployOnlyRun run = deployOnly(context.getSourceApplicationContext());
                    assertThat(run.status()).isEqualTo(1);
                    assertThat(run.summary())
                            .startsWith("Chalk functions: 0 deployed, 3 failed")
                            .containsPattern("  ✗ greet +the context has no @SpringBootApplication");
                    assertThat(context.getSourceApplicationContext().isActive()).isFalse();
                });
        runner.withUserConfiguration(NoApplicationClass.class)
                .run(context -> assertThat(context).doesNotHaveBean(ChalkFunctionsDeployOnly.class));
    }

    /**
     * Runs deploy-only as the application's ready event does, with the auto-configured deployment and functions;
     * only the JVM exit, which cannot happen inside a test, is recorded instead.
     */
    private static DeployOnlyRun deployOnly(ConfigurableApplicationContext context) {
        ByteArrayOutputStream summary = new ByteArrayOutputStream();
        AtomicInteger recordedExit = new AtomicInteger(-1);
        ChalkFunctionsDeployOnly deployOnly = new ChalkFunctionsDeployOnly(
                context.getBean(ChalkFunctionsDeployment.class),
                context.getBean(ChalkFunctions.class),
                Duration.ofMinutes(3),
                new PrintStream(summary, true, StandardCharsets.UTF_8),
                recordedExit::set);
        deployOnly.onApplicationEvent(
                new ApplicationReadyEvent(new SpringApplication(), new String[0], context, Duration.ZERO));
        return new DeployOnlyRun(recordedExit.get(), summary.toString(StandardCharsets.UTF_8));
    }

    private record DeployOnlyRun(int status, String summary) {}

    @Configuration(proxyBeanMethods = false)
    static class NoApplicationClass {

        @Bean
        Fraud fraud() {
            return new Fraud(new Greeting("Hello"));
        }
    }
}
