package ai.chalk.compute.autoconfigure.embedded;

import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.LocalRuntimeOptions;
import ai.chalk.compute.server.RuntimeChoice;
import ai.chalk.compute.server.RuntimeOptions;
import ai.chalk.compute.server.auth.Authentication;
import ai.chalk.compute.server.runtime.local.LocalIsolation;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;

/**
 * Runs a Chalk Compute server inside the application when the server module
 * ({@code chalk-compute-server}) is on the classpath and no remote {@code chalk.compute.target} is
 * set, or when {@code chalk.compute.embedded.enabled=true}. Like an embedded database, it needs no
 * setup: state goes to a temporary directory unless {@code chalk.compute.embedded.data-dir} is set,
 * and it serves in-process unless {@code chalk.compute.embedded.port} asks for a port.
 */
@AutoConfiguration
@ConditionalOnClass(ComputeServer.class)
@Conditional(OnEmbeddedServerCondition.class)
@EnableConfigurationProperties(ChalkComputeProperties.class)
public final class EmbeddedComputeServerAutoConfiguration {

    private static final AtomicInteger SERVERS = new AtomicInteger();

    @Bean
    @ConditionalOnMissingBean
    EmbeddedComputeServer chalkComputeEmbeddedServer(
            ChalkComputeProperties properties, ObjectProvider<EmbeddedComputeServerCustomizer> customizers) {
        ChalkComputeProperties.Embedded embedded = properties.getEmbedded();
        RuntimeChoice runtime = RuntimeChoice.valueOf(embedded.getRuntime().name());
        ChalkComputeProperties.Isolation isolation = properties.getLocal().getIsolation();
        int poolSize = properties.getLocal().getPoolSize();
        StringBuilder description = new StringBuilder("chalk.compute.embedded.runtime=")
                .append(runtime.label())
                .append(", chalk.compute.local.isolation=")
                .append(isolation.name().toLowerCase(Locale.ROOT));
        Integer port = embedded.getPort();
        if (port != null) {
            description
                    .append(", chalk.compute.embedded.port=")
                    .append(port)
                    .append(", chalk.compute.embedded.auth=")
                    .append(embedded.getAuth().name().toLowerCase(Locale.ROOT));
        }
        if (embedded.getDataDir() != null) {
            description.append(", chalk.compute.embedded.data-dir=").append(embedded.getDataDir());
        }
        List<EmbeddedComputeServerCustomizer> applied =
                customizers.orderedStream().toList();
        // unique in this JVM without a SecureRandom (UUID) on the startup path
        String name = "chalk-compute-embedded-" + SERVERS.incrementAndGet() + "-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong());
        // the settings are made on the thread that starts the server, so loading the server's classes
        // overlaps with the rest of the application's startup
        return new EmbeddedComputeServer(
                () -> {
                    ComputeServer.Builder settings = ComputeServer.builder()
                            .runtime(RuntimeOptions.of(
                                    runtime,
                                    LocalRuntimeOptions.builder()
                                            .isolation(LocalIsolation.valueOf(isolation.name()))
                                            .poolSize(poolSize)
                                            .build(),
                                    DockerRuntimeOptions.DEFAULTS));
                    if (port != null) {
                        settings.port(port)
                                .auth(Authentication.Mode.valueOf(
                                        embedded.getAuth().name()));
                    }
                    applied.forEach(customizer -> customizer.customize(settings));
                    return settings;
                },
                name,
                embedded.getDataDir(),
                description.toString(),
                // the application's startup waits for the server only where it must be there before the application
                // runs: a port others connect to, isolation the user requires, a Docker engine the user asked for
                port != null
                        || isolation == ChalkComputeProperties.Isolation.REQUIRED
                        || runtime == RuntimeChoice.DOCKER);
    }
}
