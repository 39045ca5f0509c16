package ai.chalk.compute.autoconfigure.health;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.autoconfigure.endpoint.ChalkComputeEndpoint;
import ai.chalk.compute.autoconfigure.endpoint.ChalkComputeEndpointAutoConfiguration;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The {@code chalkCompute} health indicator and the {@code chalkcompute} endpoint. */
class ChalkComputeActuatorTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    EmbeddedComputeServerAutoConfiguration.class,
                    ChalkComputeHealthAutoConfiguration.class,
                    ChalkComputeEndpointAutoConfiguration.class))
            .withPropertyValues("management.endpoints.web.exposure.include=health,chalkcompute");

    @Test
    void theEmbeddedServerIsUpWithItsRuntimeIsolationAndSandboxCounts() {
        runner.run(context -> {
            assertThat(context).hasBean("chalkComputeHealthIndicator");
            SandboxClient client = context.getBean(SandboxClient.class);
            Sandbox sandbox = client.create();
            Health health = context.getBean(ChalkComputeHealthIndicator.class).health();
            assertThat(health.getStatus()).isEqualTo(Status.UP);
            Map<String, Object> details = health.getDetails();
            assertThat(details)
                    .containsEntry("server", "embedded")
                    .containsEntry("runtime", "local")
                    .containsKeys("inProcessName", "isolation", "isolationDetail", "pooledSandboxes")
                    .doesNotContainKey("port");
            EmbeddedComputeServer embedded = context.getBean(EmbeddedComputeServer.class);
            assertThat(details.get("isolation")).isEqualTo(embedded.isolation().level());
            assertThat(details.get("sandboxes"))
                    .isEqualTo(Map.of("PENDING", 0L, "RUNNING", 1L, "SUSPENDED", 0L, "TERMINATED", 0L, "FAILED", 0L));
            sandbox.terminate();
            assertThat(context.getBean(ChalkComputeHealthIndicator.class)
                            .health()
                            .getDetails()
                            .get("sandboxes"))
                    .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
                    .containsEntry("RUNNING", 0L)
                    .containsEntry("TERMINATED", 1L);
        });
    }

    @Test
    void aStoppedEmbeddedServerIsDown() {
        runner.run(context -> {
            context.getBean(EmbeddedComputeServer.class).stop();
            Health health = context.getBean(ChalkComputeHealthIndicator.class).health();
            assertThat(health.getStatus()).isEqualTo(Status.DOWN);
            assertThat(health.getDetails()).containsEntry("server", "embedded").containsEntry("running", false);
        });
    }

    @Test
    void anUnreachableRemoteServerIsDownNamingTheTarget() {
        runner.withPropertyValues("chalk.compute.target=127.0.0.1:1").run(context -> {
            Health health = context.getBean(ChalkComputeHealthIndicator.class).health();
            assertThat(health.getStatus()).isEqualTo(Status.DOWN);
            assertThat(health.getDetails())
                    .containsEntry("server", "127.0.0.1:1")
                    .containsEntry("status", "UNAVAILABLE")
                    .containsEntry("error", "connection refused to 127.0.0.1:1");
        });
    }

    @Test
    void aRemoteServerShowsItsRuntimeIsolationAndSandboxCountsAsTheEmbeddedOneDoes(@TempDir Path dataDir)
            throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .auth(Authentication.Mode.NONE)
                .build()
                .start()) {
            String target = "127.0.0.1:" + server.port().orElseThrow();
            runner.withPropertyValues("chalk.compute.target=" + target).run(context -> {
                Sandbox sandbox = context.getBean(SandboxClient.class).create();
                try {
                    Health health =
                            context.getBean(ChalkComputeHealthIndicator.class).health();
                    assertThat(health.getStatus()).isEqualTo(Status.UP);
                    assertThat(health.getDetails())
                            .containsEntry("server", target)
                            .containsEntry("runtime", server.runtimeName())
                            .containsEntry("isolation", server.isolation().level())
                            .containsEntry("isolationDetail", server.isolation().detail())
                            .containsKey("pooledSandboxes")
                            .containsEntry(
                                    "sandboxes",
                                    Map.of(
                                            "PENDING",
                                            0L,
                                            "RUNNING",
                                            1L,
                                            "SUSPENDED",
                                            0L,
                                            "TERMINATED",
                                            0L,
                                            "FAILED",
                                            0L));
                } finally {
                    sandbox.terminate();
                }
            });
        }
    }

    @Test
    void theEndpointAnswersWithTheReasonWhenTheRemoteServerIsUnreachable() {
        runner.withPropertyValues("chalk.compute.target=127.0.0.1:1").run(context -> {
            // an exception here is what made the endpoint answer HTTP 500
            ChalkComputeEndpoint.ChalkComputeDescriptor shown =
                    context.getBean(ChalkComputeEndpoint.class).chalkCompute();
            assertThat(shown.server()).isEqualTo("127.0.0.1:1");
            assertThat(shown.reachable()).isFalse();
            assertThat(shown.sandboxes()).isEmpty();
            assertThat(shown.error()).isEqualTo("UNAVAILABLE: connection refused to 127.0.0.1:1");
        });
    }

    @Test
    void theEndpointListsSandboxes() {
        runner.run(context -> {
            SandboxClient client = context.getBean(SandboxClient.class);
            Sandbox sandbox = client.create(Sandbox.builder().name("listed"));
            ChalkComputeEndpoint.ChalkComputeDescriptor shown =
                    context.getBean(ChalkComputeEndpoint.class).chalkCompute();
            assertThat(shown.server()).isEqualTo("embedded");
            assertThat(shown.reachable()).isTrue();
            assertThat(shown.error()).isNull();
            assertThat(shown.sandboxes()).singleElement().satisfies(s -> {
                assertThat(s.id()).isEqualTo(sandbox.id());
                assertThat(s.name()).isEqualTo("listed");
                assertThat(s.state()).isEqualTo("RUNNING");
                assertThat(s.createdAt()).isNotNull();
            });
            sandbox.terminate();
            assertThat(context.getBean(ChalkComputeEndpoint.class)
                            .chalkCompute()
                            .sandboxes())
                    .isEmpty();
        });
    }

    @Test
    void theHealthIndicatorCanBeSwitchedOffAndReplaced() {
        runner.withPropertyValues("management.health.chalkcompute.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean("chalkComputeHealthIndicator"));
        runner.withUserConfiguration(UserHealth.class)
                .run(context -> assertThat(context.getBean("chalkComputeHealthIndicator"))
                        .isSameAs(UserHealth.INDICATOR));
    }

    @Test
    void theUsersEndpointWins() {
        runner.withUserConfiguration(UserEndpoint.class)
                .run(context -> assertThat(context.getBean(ChalkComputeEndpoint.class))
                        .isSameAs(context.getBean(UserEndpoint.class).endpoint));
    }

    @Test
    void theEndpointIsOnlyThereWhenExposed() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        ChalkComputeAutoConfiguration.class,
                        EmbeddedComputeServerAutoConfiguration.class,
                        ChalkComputeEndpointAutoConfiguration.class))
                .run(context -> assertThat(context).doesNotHaveBean(ChalkComputeEndpoint.class));
    }

    @Test
    void withoutActuatorThereIsNeitherHealthNorEndpoint() {
        runner.withClassLoader(
                        new FilteredClassLoader("org.springframework.boot.health", "org.springframework.boot.actuate"))
                .run(context -> assertThat(context)
                        .hasNotFailed()
                        .doesNotHaveBean(ChalkComputeHealthIndicator.class)
                        .doesNotHaveBean(ChalkComputeEndpoint.class));
    }

    /** The application's own endpoint. */
    @Configuration(proxyBeanMethods = false)
    static class UserEndpoint {
        ChalkComputeEndpoint endpoint;

        @Bean
        ChalkComputeEndpoint myEndpoint(
                SandboxClient client, ai.chalk.compute.autoconfigure.ChalkComputeChannel channel) {
            endpoint = new ChalkComputeEndpoint(client, channel);
            return endpoint;
        }
    }

    /** The application's own indicator under the same name. */
    @Configuration(proxyBeanMethods = false)
    static class UserHealth {
        static final HealthIndicator INDICATOR = () -> Health.up().build();

        @Bean
        HealthIndicator chalkComputeHealthIndicator() {
            return INDICATOR;
        }
    }
}
