package ai.chalk.compute.autoconfigure.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerCustomizer;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.grpc.client.autoconfigure.CompositeChannelFactoryAutoConfiguration;
import org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration;
import org.springframework.boot.grpc.client.autoconfigure.GrpcClientObservationAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.client.GrpcChannelFactory;

/** Which observations are set up, and what a sandbox's lifecycle records. */
class ChalkComputeObservationAutoConfigurationTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    EmbeddedComputeServerAutoConfiguration.class,
                    ChalkComputeObservationAutoConfiguration.class));

    private final ApplicationContextRunner withSpringGrpc = runner.withConfiguration(AutoConfigurations.of(
            GrpcClientAutoConfiguration.class, CompositeChannelFactoryAutoConfiguration.class,
            GrpcClientObservationAutoConfiguration.class, SslAutoConfiguration.class));

    @Test
    void withoutAnObservationRegistryNothingIsObserved() {
        runner.run(context -> assertThat(context)
                .hasNotFailed()
                .doesNotHaveBean(SandboxLifecycleObservationInterceptor.class)
                .doesNotHaveBean(EmbeddedComputeServerCustomizer.class));
    }

    @Test
    void lifecycleStepsClientCallsAndServerCallsAreObserved() {
        withSpringGrpc.withUserConfiguration(Registry.class).run(context -> {
            assertThat(context)
                    .hasSingleBean(SandboxLifecycleObservationInterceptor.class)
                    .hasSingleBean(EmbeddedComputeServerCustomizer.class)
                    .doesNotHaveBean("chalkComputeGrpcClientObservations");
            Sandbox sandbox = context.getBean(SandboxClient.class).create();
            sandbox.exec("true");
            sandbox.terminate();
            TestObservationRegistry registry = context.getBean(TestObservationRegistry.class);
            TestObservationRegistryAssert.assertThat(registry)
                    .hasObservationWithNameEqualTo(SandboxLifecycleObservationInterceptor.OBSERVATION_NAME)
                    .that()
                    .hasContextualNameEqualTo("sandbox create")
                    .hasLowCardinalityKeyValue(SandboxLifecycleObservationInterceptor.STEP, "create")
                    .hasLowCardinalityKeyValue(SandboxLifecycleObservationInterceptor.OUTCOME, "OK")
                    .hasHighCardinalityKeyValue(SandboxLifecycleObservationInterceptor.SANDBOX_ID, sandbox.id())
                    .hasBeenStopped();
            TestObservationRegistryAssert.assertThat(registry)
                    .hasAnObservation(o -> o.hasContextualNameEqualTo("sandbox exec")
                            .hasHighCardinalityKeyValue(
                                    SandboxLifecycleObservationInterceptor.SANDBOX_ID, sandbox.id()))
                    .hasAnObservation(o -> o.hasContextualNameEqualTo("sandbox terminate"))
                    // Spring gRPC's client observation and the embedded server's
                    .hasNumberOfObservationsWithNameEqualTo("grpc.client", 3)
                    .hasNumberOfObservationsWithNameEqualTo("grpc.server", 3);
        });
    }

    @Test
    void withoutSpringGrpcTheChannelGetsMicrometersClientObservations() {
        runner.withClassLoader(new FilteredClassLoader(GrpcChannelFactory.class))
                .withUserConfiguration(Registry.class)
                .run(context -> {
                    assertThat(context).hasBean("chalkComputeGrpcClientObservations");
                    context.getBean(SandboxClient.class).list();
                    TestObservationRegistryAssert.assertThat(context.getBean(TestObservationRegistry.class))
                            .hasNumberOfObservationsWithNameEqualTo("grpc.client", 1)
                            .hasNumberOfObservationsWithNameEqualTo("grpc.server", 1);
                });
    }

    @Test
    void theUsersLifecycleInterceptorWins() {
        runner.withUserConfiguration(Registry.class, UserInterceptor.class)
                .run(context -> assertThat(context.getBean(SandboxLifecycleObservationInterceptor.class))
                        .isSameAs(UserInterceptor.INTERCEPTOR));
    }

    @Configuration(proxyBeanMethods = false)
    static class Registry {
        @Bean
        TestObservationRegistry observationRegistry() {
            return TestObservationRegistry.create();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class UserInterceptor {
        static final SandboxLifecycleObservationInterceptor INTERCEPTOR =
                new SandboxLifecycleObservationInterceptor(ObservationRegistry.NOOP);

        @Bean
        SandboxLifecycleObservationInterceptor myInterceptor() {
            return INTERCEPTOR;
        }
    }
}
