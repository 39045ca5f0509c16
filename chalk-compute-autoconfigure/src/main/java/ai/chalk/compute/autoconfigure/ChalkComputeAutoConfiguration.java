package ai.chalk.compute.autoconfigure;

import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.runtime.local.LocalIsolation;
import java.nio.file.Path;
import java.util.UUID;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Chalk Compute in a Spring Boot application: a {@link SandboxClient} bound to
 * {@code chalk.compute.target}, or to an embedded server when no target is set.
 */
@AutoConfiguration
@EnableConfigurationProperties(ChalkComputeProperties.class)
public class ChalkComputeAutoConfiguration {

    /** The embedded server, when the server module is on the classpath and no remote target is set. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(ComputeServer.class)
    @ConditionalOnExpression("'${chalk.compute.embedded.enabled:auto}'.equalsIgnoreCase('true') or "
            + "('${chalk.compute.embedded.enabled:auto}'.equalsIgnoreCase('auto') and '${chalk.compute.target:}'.isEmpty())")
    static class EmbeddedServerConfiguration {

        @Bean
        @ConditionalOnMissingBean
        EmbeddedComputeServer chalkComputeEmbeddedServer(ChalkComputeProperties properties) {
            ChalkComputeProperties.Embedded embedded = properties.getEmbedded();
            Path temporary = embedded.getDataDir() == null ? EmbeddedComputeServer.createTemporaryDataDir() : null;
            ComputeServer.Builder settings = ComputeServer.builder()
                    .dataDir(temporary != null ? temporary : embedded.getDataDir())
                    .runtime(embedded.getRuntime())
                    .localIsolation(LocalIsolation.valueOf(properties.getLocal().getIsolation().name()));
            if (embedded.getPort() != null) {
                settings.port(embedded.getPort());
            }
            return new EmbeddedComputeServer(settings, "chalk-compute-embedded-" + UUID.randomUUID(), temporary);
        }
    }

    @Bean
    @ConditionalOnMissingBean
    SandboxClient chalkComputeSandboxClient(ChalkComputeProperties properties,
                                            ObjectProvider<EmbeddedComputeServer> embedded) {
        if (properties.getTarget() != null && !properties.getTarget().isBlank()) {
            return SandboxClient.builder().target(properties.getTarget()).build();
        }
        EmbeddedComputeServer server = embedded.getIfAvailable();
        if (server == null) {
            throw new IllegalStateException("Chalk Compute has no server to talk to: set chalk.compute.target to a"
                    + " remote server, or add chalk-compute-server to the classpath for the embedded one");
        }
        return SandboxClient.inProcess(server.inProcessName());
    }
}
