package ai.chalk.compute.autoconfigure.endpoint;

import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsAutoConfiguration;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsDeployment;
import ai.chalk.compute.sandbox.SandboxClient;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Adds the {@code chalkfunctions} actuator endpoint when actuator is present and the endpoint is exposed
 * ({@code management.endpoints.web.exposure.include=chalkfunctions}), with its web extension reading a function's
 * logs from the server; it redeploys through the application's {@link ChalkFunctionsDeployment} when there is one.
 */
@AutoConfiguration(after = ChalkFunctionsAutoConfiguration.class)
@ConditionalOnClass(ConditionalOnAvailableEndpoint.class)
@ConditionalOnBean(ChalkFunctions.class)
public final class ChalkFunctionsEndpointAutoConfiguration {

    @Bean
    @ConditionalOnAvailableEndpoint
    @ConditionalOnMissingBean
    ChalkFunctionsEndpoint chalkFunctionsEndpoint(
            ChalkFunctions functions, ObjectProvider<ChalkFunctionsDeployment> deployment) {
        return new ChalkFunctionsEndpoint(functions, deployment.getIfUnique());
    }

    /** {@code /actuator/chalkfunctions/{name}/logs}, read from the server the application deploys to. */
    @Bean
    @ConditionalOnAvailableEndpoint(endpoint = ChalkFunctionsEndpoint.class)
    @ConditionalOnBean(SandboxClient.class)
    @ConditionalOnMissingBean
    ChalkFunctionsLogsWebExtension chalkFunctionsLogsWebExtension(SandboxClient client) {
        return new ChalkFunctionsLogsWebExtension(client.functions());
    }
}
