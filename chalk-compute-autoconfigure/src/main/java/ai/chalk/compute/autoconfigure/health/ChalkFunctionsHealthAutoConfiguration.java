package ai.chalk.compute.autoconfigure.health;

import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsAutoConfiguration;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * Adds the {@code chalkFunctions} health contributor, one member per function, when Spring Boot's health support
 * is present. Switch it off with {@code management.health.chalkfunctions.enabled=false}.
 */
@AutoConfiguration(after = ChalkFunctionsAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(ChalkFunctions.class)
public final class ChalkFunctionsHealthAutoConfiguration {

    @Bean
    @ConditionalOnEnabledHealthIndicator("chalkfunctions")
    @ConditionalOnMissingBean(name = "chalkFunctionsHealthContributor")
    ChalkFunctionsHealthContributor chalkFunctionsHealthContributor(
            ChalkFunctions functions, ObjectProvider<FunctionDeployer> deployer) {
        return new ChalkFunctionsHealthContributor(functions, deployer.getIfUnique());
    }
}
