package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.function.FunctionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Discovers the application's {@code @ChalkFunction}, {@code @ChalkScorer} and {@code @ChalkClass} beans once
 * all singletons exist ({@link ChalkFunctions}). Switch it off with {@code chalk.compute.functions.enabled=false}.
 * Define a {@link FunctionRegistry} bean to use your own Arrow mapping (custom types).
 */
@AutoConfiguration
@ConditionalOnBooleanProperty(name = "chalk.compute.functions.enabled", matchIfMissing = true)
@EnableConfigurationProperties(ChalkComputeProperties.class)
public final class ChalkFunctionsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    FunctionRegistry chalkComputeFunctionRegistry() {
        return new FunctionRegistry();
    }

    @Bean
    @ConditionalOnMissingBean
    ChalkFunctions chalkFunctions(FunctionRegistry registry) {
        return new ChalkFunctions(registry);
    }
}
