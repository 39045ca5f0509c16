package ai.chalk.compute.autoconfigure.endpoint;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.ChalkComputeChannel;
import ai.chalk.compute.sandbox.SandboxClient;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Adds the {@code chalkcompute} actuator endpoint when actuator is present and the endpoint is
 * exposed ({@code management.endpoints.web.exposure.include=chalkcompute}).
 */
@AutoConfiguration(after = ChalkComputeAutoConfiguration.class)
@ConditionalOnClass(ConditionalOnAvailableEndpoint.class)
@ConditionalOnBean({SandboxClient.class, ChalkComputeChannel.class})
public final class ChalkComputeEndpointAutoConfiguration {

    @Bean
    @ConditionalOnAvailableEndpoint
    @ConditionalOnMissingBean
    ChalkComputeEndpoint chalkComputeEndpoint(SandboxClient client, ChalkComputeChannel channel) {
        return new ChalkComputeEndpoint(client, channel);
    }
}
