package ai.chalk.compute.autoconfigure.dataset;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.dataset.DatasetClient;
import ai.chalk.compute.sandbox.SandboxClient;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * A {@link DatasetClient} bean talking to the server the application's {@link SandboxClient} talks to, through the
 * same channel (and so the same credentials and interceptors). Define your own {@code DatasetClient} bean to replace
 * it.
 */
@AutoConfiguration(after = ChalkComputeAutoConfiguration.class)
@ConditionalOnBean(SandboxClient.class)
public final class ChalkComputeDatasetsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    DatasetClient chalkComputeDatasetClient(SandboxClient client) {
        return DatasetClient.of(client);
    }
}
