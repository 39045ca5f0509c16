package ai.chalk.compute.autoconfigure;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.springframework.core.env.Environment;

/**
 * The Chalk SDK's environment variables and the home and working directories, as Spring's
 * {@link Environment} sees them: by default the process environment and the {@code user.home} and
 * {@code user.dir} system properties, so a test can supply its own through a property source instead
 * of changing the real process environment.
 */
public final class SdkEnvironment {

    /** The variables the SDK reads for credentials, progress and colour. */
    public static final List<String> VARIABLES = List.of(
            "CHALK_API_SERVER",
            "CHALK_CLIENT_ID",
            "CHALK_CLIENT_SECRET",
            "CHALK_ENVIRONMENT",
            "CHALK_ENVIRONMENT_ID",
            "CHALK_WEB_IDENTITY_TOKEN_FILE",
            "XDG_CONFIG_HOME",
            "CHALK_SANDBOX_TUI",
            "NO_COLOR",
            "TERM",
            "CI");

    private final Map<String, String> variables;
    private final Path homeDirectory;
    private final Path workingDirectory;

    private SdkEnvironment(Map<String, String> variables, Path homeDirectory, Path workingDirectory) {
        this.variables = Map.copyOf(variables);
        this.homeDirectory = homeDirectory;
        this.workingDirectory = workingDirectory;
    }

    /**
     * Reads the SDK's variables ({@link #VARIABLES}) and {@code user.home} / {@code user.dir} from a Spring environment.
     *
     * @param environment the application's environment
     * @return what the SDK would see
     */
    public static SdkEnvironment from(Environment environment) {
        Objects.requireNonNull(environment, "environment");
        Map<String, String> variables = new HashMap<>();
        for (String name : VARIABLES) {
            String value = environment.getProperty(name);
            if (value != null) {
                variables.put(name, value);
            }
        }
        return new SdkEnvironment(
                variables,
                Path.of(environment.getProperty("user.home", System.getProperty("user.home"))),
                Path.of(environment.getProperty("user.dir", System.getProperty("user.dir"))));
    }

    /** The SDK's variables that are set, by name. */
    public Map<String, String> variables() {
        return variables;
    }

    /** Where {@code ~/.chalk.yml} is looked for. */
    public Path homeDirectory() {
        return homeDirectory;
    }

    /** The directory whose login in {@code ~/.chalk.yml} applies. */
    public Path workingDirectory() {
        return workingDirectory;
    }
}
