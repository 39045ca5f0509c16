package ai.chalk.compute.autoconfigure.function;

import java.util.Map;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.config.ConfigDataEnvironmentPostProcessor;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * A deploy-only run ({@code chalk.compute.functions.deploy-only=true}) starts no web server: it deploys, prints its
 * summary and exits, so it must not need, or take, the application's port (a CI host where it is in use, or where
 * another build listens on 8080). Sets {@code spring.main.web-application-type=none} above every other source once
 * the application's configuration is read, before Spring Boot decides what kind of context to make.
 */
public final class DeployOnlyEnvironmentPostProcessor implements EnvironmentPostProcessor, Ordered {

    /** The property source this adds, first in the environment. */
    static final String SOURCE_NAME = "chalkComputeDeployOnly";

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        if (environment.getProperty("chalk.compute.functions.deploy-only", Boolean.class, false)) {
            environment
                    .getPropertySources()
                    .addFirst(new MapPropertySource(SOURCE_NAME, Map.of("spring.main.web-application-type", "none")));
        }
    }

    /** After the application's own configuration ({@code application.yml}, profiles) is read. */
    @Override
    public int getOrder() {
        return ConfigDataEnvironmentPostProcessor.ORDER + 1;
    }
}
