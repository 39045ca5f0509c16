package ai.chalk.compute.autoconfigure;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.MutablePropertySources;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Gives a test context its own process environment and home directory through Spring's property
 * sources, the way the auto-configuration reads them, without touching the real process environment.
 */
public final class TestEnvironment {

    private TestEnvironment() {}

    /**
     * Replaces the context's {@code systemEnvironment} property source with these variables only, and
     * points {@code user.home} (where {@code ~/.chalk.yml} is read) at the given directory.
     *
     * @param variables the environment variables the application sees
     * @param home      the home directory it sees
     * @return an initializer for {@code ApplicationContextRunner.withInitializer}
     */
    public static ApplicationContextInitializer<ConfigurableApplicationContext> of(
            Map<String, Object> variables, Path home) {
        return context -> {
            MutablePropertySources sources = context.getEnvironment().getPropertySources();
            sources.replace(
                    StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
                    new SystemEnvironmentPropertySource(
                            StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, new HashMap<>(variables)));
            Map<String, Object> system = new HashMap<>();
            System.getProperties().forEach((k, v) -> system.put(String.valueOf(k), v));
            system.put("user.home", home.toString());
            system.put("user.dir", home.toString());
            sources.replace(
                    StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME,
                    new MapPropertySource(StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME, system));
        };
    }
}
