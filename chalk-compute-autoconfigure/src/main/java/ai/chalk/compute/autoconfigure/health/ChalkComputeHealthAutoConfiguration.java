package ai.chalk.compute.autoconfigure.health;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.ChalkComputeChannel;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * Adds the {@code chalkCompute} health indicator when Spring Boot's health support is present.
 * Switch it off with {@code management.health.chalkcompute.enabled=false}.
 */
@AutoConfiguration(after = ChalkComputeAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(ChalkComputeChannel.class)
public final class ChalkComputeHealthAutoConfiguration {

    @Bean
    @ConditionalOnEnabledHealthIndicator("chalkcompute")
    @ConditionalOnMissingBean(name = "chalkComputeHealthIndicator")
    ChalkComputeHealthIndicator chalkComputeHealthIndicator(
            ChalkComputeChannel channel, ObjectProvider<EmbeddedComputeServer> embedded) {
        return new ChalkComputeHealthIndicator(
                channel, embedded::getIfAvailable, ChalkComputeHealthIndicator.DEFAULT_TIMEOUT);
    }
}
