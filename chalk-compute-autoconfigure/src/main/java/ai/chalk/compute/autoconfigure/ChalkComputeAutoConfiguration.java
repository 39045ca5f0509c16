package ai.chalk.compute.autoconfigure;

import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sql.SQLClient;
import io.grpc.ChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.grpc.client.autoconfigure.GrpcChannelFactoryCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.client.ChannelCredentialsProvider;
import org.springframework.grpc.client.DefaultGrpcChannelFactory;
import org.springframework.grpc.client.GrpcChannelFactory;

/**
 * Chalk Compute in a Spring Boot application: a {@link SandboxClient} bean talking to the remote
 * {@code chalk.compute.target}, or to the embedded server when no target is set.
 *
 * <p>The client's {@link ChalkComputeChannel} is opened through Spring gRPC's {@code GrpcChannelFactory}
 * when Spring gRPC's client is present, so {@code spring.grpc.client.*}, global client interceptors and
 * observations apply to it; otherwise with plain grpc-java. Every bean backs off when the application
 * defines one of the same type.
 */
@AutoConfiguration(
        after = EmbeddedComputeServerAutoConfiguration.class,
        afterName = {
            "org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration",
            "org.springframework.boot.grpc.client.autoconfigure.CompositeChannelFactoryAutoConfiguration"
        })
@EnableConfigurationProperties(ChalkComputeProperties.class)
public final class ChalkComputeAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(ChalkComputeAutoConfiguration.class);

    @Bean
    @ConditionalOnMissingBean({ChalkComputeChannel.class, SandboxClient.class
    }) // a user's own client needs no channel of ours
    @Conditional(NotAWorkerWithoutTarget.class)
    ChalkComputeChannel chalkComputeChannel(
            ChalkComputeProperties properties,
            ObjectProvider<ChannelOpener> openers,
            ObjectProvider<EmbeddedComputeServer> embedded,
            ObjectProvider<ChalkComputeChannelInterceptor> interceptors) {
        ChannelOpener opener = openers.getIfAvailable(() -> ChannelOpener.PLAIN);
        ChalkComputeChannel channel;
        if (properties.hasTarget()) {
            RemoteTarget target = RemoteTarget.of(properties);
            channel = ChalkComputeChannel.remote(() -> opener.openRemote(target), target.address());
            log.debug("Chalk Compute client talks to {} ({})", target.address(), target.describeTls());
        } else {
            EmbeddedComputeServer server = embedded.getIfAvailable();
            if (server == null) {
                throw new IllegalStateException("Chalk Compute has no server to talk to: set chalk.compute.target to a"
                        + " remote server (host:port or URL), or put chalk-compute-server on the classpath (and leave"
                        + " chalk.compute.embedded.enabled at auto) for the embedded one");
            }
            String name = server.inProcessName();
            // the application's startup does not wait for the embedded server: its first call does
            channel = ChalkComputeChannel.embedded(
                    () -> {
                        try {
                            server.awaitServing();
                        } catch (RuntimeException e) {
                            throw io.grpc.Status.UNAVAILABLE
                                    .withDescription(e.getMessage())
                                    .withCause(e)
                                    .asRuntimeException();
                        }
                        return opener.openInProcess(name);
                    },
                    name);
        }
        ChalkComputeChannel.Kind kind = channel.kind();
        List<ChalkComputeChannelInterceptor> applicable = interceptors
                .orderedStream()
                .filter(interceptor -> interceptor.appliesTo(kind))
                .toList();
        return channel.withInterceptors(applicable);
    }

    @Bean
    @ConditionalOnMissingBean
    @Conditional(NotAWorkerWithoutTarget.class)
    SandboxClient chalkComputeSandboxClient(
            ChalkComputeChannel channel, ObjectProvider<ProgressDisplay> progress, ChalkComputeProperties properties) {
        // image builds show on the application's progress display (chalk.compute.progress.*)
        // a remote server with a certificate of its own serves its signed links (datasets, SQL results) with it too
        Optional<Path> trust = channel.kind() == ChalkComputeChannel.Kind.REMOTE
                ? Optional.ofNullable(properties.getTls().getTrustCertificates())
                : Optional.empty();
        SandboxClient client =
                SandboxClient.forChannel(channel.channel(), progress.getIfAvailable(ProgressDisplay::fromEnv), trust);
        // chalk.compute.sandbox.default-*: the client does not own the channel, so the copy needs no closing of its own
        return client.withSandboxDefaults(properties.getSandbox().toDefaults());
    }

    /** Chalk SQL on the same channel, and so the same credentials and interceptors, as the {@link SandboxClient}. */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(SandboxClient.class)
    SQLClient chalkComputeSqlClient(SandboxClient sandboxes) {
        return SQLClient.of(sandboxes);
    }

    /**
     * Matches unless the application runs as a function worker with no {@code chalk.compute.target}: a worker has
     * no embedded server (its replica has no network and the server that started it is not reachable from it), so
     * without a target there is no server for a client to talk to, and the worker must still boot to serve its
     * functions.
     */
    static final class NotAWorkerWithoutTarget extends AnyNestedCondition {

        NotAWorkerWithoutTarget() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnBooleanProperty(
                name = "chalk.compute.functions.worker",
                havingValue = false,
                matchIfMissing = true)
        static final class NotAWorker {}

        @ConditionalOnRemoteTarget
        static final class TargetSet {}
    }

    /** Opens channels through Spring gRPC's channel factory. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({GrpcChannelFactory.class, GrpcChannelFactoryCustomizer.class})
    static class SpringGrpcChannelConfiguration {

        @Bean
        ChannelOpener chalkComputeChannelOpener(ObjectProvider<GrpcChannelFactory> factories) {
            return new SpringGrpcChannelOpener(factories);
        }

        /**
         * Makes Spring gRPC's channel factories use the TLS choice of {@code chalk.compute.tls.*} or an
         * {@code https://}/{@code http://} target for the Chalk Compute target only.
         */
        @Bean
        @ConditionalOnRemoteTarget
        GrpcChannelFactoryCustomizer chalkComputeChannelCredentials(
                ChalkComputeProperties properties, ObjectProvider<ChannelCredentialsProvider> credentials) {
            return factory -> {
                if (!properties.hasTarget() || !(factory instanceof DefaultGrpcChannelFactory<?> defaults)) {
                    return;
                }
                RemoteTarget target = RemoteTarget.of(properties);
                ChannelCredentials chosen = target.explicitCredentials();
                if (chosen == null) {
                    return;
                }
                ChannelCredentialsProvider delegate =
                        credentials.getIfAvailable(() -> ChannelCredentialsProvider.INSECURE);
                defaults.setCredentialsProvider(
                        path -> target.address().equals(path) ? chosen : delegate.getChannelCredentials(path));
            };
        }
    }

    /** How the channel is opened: through Spring gRPC when present, else with grpc-java alone. */
    interface ChannelOpener {

        /** grpc-java alone, no Spring gRPC. */
        ChannelOpener PLAIN = new ChannelOpener() {
            @Override
            public ManagedChannel openRemote(RemoteTarget target) {
                return target.connectionSettings().openChannel();
            }

            @Override
            public ManagedChannel openInProcess(String name) {
                return InProcessChannelBuilder.forName(name).build();
            }
        };

        ManagedChannel openRemote(RemoteTarget target);

        ManagedChannel openInProcess(String name);
    }

    /** Opens channels with Spring gRPC's {@link GrpcChannelFactory}, falling back to grpc-java alone. */
    static final class SpringGrpcChannelOpener implements ChannelOpener {

        private final ObjectProvider<GrpcChannelFactory> factories;

        SpringGrpcChannelOpener(ObjectProvider<GrpcChannelFactory> factories) {
            this.factories = factories;
        }

        @Override
        public ManagedChannel openRemote(RemoteTarget target) {
            GrpcChannelFactory factory = factories.getIfUnique();
            if (target.address().startsWith("unix:")) {
                // a local socket (a function worker's way back to its server) never carries TLS, but Spring gRPC's
                // factory builds domain-socket channels with Netty's default negotiation, which is TLS
                return PLAIN.openRemote(target);
            }
            if (factory == null || !factory.supports(target.address())) {
                log.debug(
                        "No Spring gRPC channel factory for {}; opening the channel with grpc-java", target.address());
                return PLAIN.openRemote(target);
            }
            return factory.createChannel(target.address());
        }

        @Override
        public ManagedChannel openInProcess(String name) {
            GrpcChannelFactory factory = factories.getIfUnique();
            String target = "in-process:" + name;
            if (factory == null || !factory.supports(target)) {
                return PLAIN.openInProcess(name);
            }
            return factory.createChannel(target);
        }
    }
}
