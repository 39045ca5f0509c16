package ai.chalk.compute.autoconfigure.tracing;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.ChalkComputeChannelInterceptor;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerCustomizer;
import ai.chalk.compute.server.ComputeServer;
import io.micrometer.core.instrument.binder.grpc.ObservationGrpcClientInterceptor;
import io.micrometer.core.instrument.binder.grpc.ObservationGrpcServerInterceptor;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Micrometer observations of Chalk Compute, when the application has an {@link ObservationRegistry}
 * (Spring Boot's observation support, for example through {@code spring-boot-starter-opentelemetry},
 * which turns them into spans exported over OTLP):
 * <ul>
 *   <li>each sandbox lifecycle step the client takes ({@link SandboxLifecycleObservationInterceptor});</li>
 *   <li>each gRPC call: through Spring gRPC's client observations when the channel comes from its
 *       channel factory, else through Micrometer's {@code ObservationGrpcClientInterceptor}; the trace
 *       context travels in the call's metadata (W3C {@code traceparent} with OpenTelemetry);</li>
 *   <li>each call the embedded server handles, as a child of the caller's span (Micrometer's
 *       {@code ObservationGrpcServerInterceptor} reads the context from the metadata).</li>
 * </ul>
 */
@AutoConfiguration(
        before = ChalkComputeAutoConfiguration.class,
        afterName = {
            "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
            "org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration",
            "org.springframework.boot.grpc.client.autoconfigure.CompositeChannelFactoryAutoConfiguration"
        })
@ConditionalOnClass(ObservationRegistry.class)
@ConditionalOnBean(ObservationRegistry.class)
public final class ChalkComputeObservationAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    SandboxLifecycleObservationInterceptor chalkComputeLifecycleObservations(ObservationRegistry registry) {
        return new SandboxLifecycleObservationInterceptor(registry);
    }

    /** The embedded server's spans join the caller's trace. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({ObservationGrpcServerInterceptor.class, ComputeServer.class})
    static class EmbeddedServerObservationConfiguration {

        @Bean
        EmbeddedComputeServerCustomizer chalkComputeServerObservations(ObservationRegistry registry) {
            return server -> server.interceptors(new ObservationGrpcServerInterceptor(registry));
        }
    }

    /** gRPC client observations when the channel does not come from Spring gRPC's channel factory. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(ObservationGrpcClientInterceptor.class)
    @ConditionalOnMissingBean(type = "org.springframework.grpc.client.GrpcChannelFactory")
    static class PlainChannelObservationConfiguration {

        @Bean
        ChalkComputeChannelInterceptor chalkComputeGrpcClientObservations(ObservationRegistry registry) {
            return new ClientCallObservations(registry);
        }
    }
}
