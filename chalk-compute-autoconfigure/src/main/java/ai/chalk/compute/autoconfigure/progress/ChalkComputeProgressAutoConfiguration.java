package ai.chalk.compute.autoconfigure.progress;

import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.autoconfigure.SdkEnvironment;
import ai.chalk.compute.progress.ColorMode;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressMode;
import ai.chalk.compute.progress.ProgressSettings;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * The progress display in the SDK's format on stderr, for long operations: function deployments and image builds
 * (not each sandbox's lifecycle, which would flood the console of an application that makes one per request; those
 * are spans with OpenTelemetry). Whether it shows comes from
 * {@code chalk.compute.tui} (true / false), else {@code CHALK_SANDBOX_TUI}; whether it is coloured
 * from {@code chalk.compute.color} (always / never), else the terminal, {@code NO_COLOR},
 * {@code TERM=dumb} and {@code CI}. Inject {@link ProgressDisplay} to report an operation's steps:
 * <pre>{@code
 * try (ProgressGroup group = progress.open("Sandbox \"build\"")) {
 *     group.step("Creating sandbox");
 *     ...
 *     group.succeed("Running");
 * }
 * }</pre>
 */
@AutoConfiguration
@EnableConfigurationProperties(ChalkComputeProperties.class)
public final class ChalkComputeProgressAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    ProgressSettings chalkComputeProgressSettings(ChalkComputeProperties properties, Environment environment) {
        ProgressMode tui = switch (properties.getTui()) {
            case AUTO -> ProgressMode.AUTO;
            case TRUE -> ProgressMode.ON;
            case FALSE -> ProgressMode.OFF;
        };
        ColorMode color = switch (properties.getColor()) {
            case AUTO -> ColorMode.AUTO;
            case ALWAYS -> ColorMode.ALWAYS;
            case NEVER -> ColorMode.NEVER;
        };
        return ProgressSettings.fromEnv(SdkEnvironment.from(environment).variables())
                .overriddenBy(tui, color);
    }

    @Bean
    @ConditionalOnMissingBean
    ProgressDisplay chalkComputeProgressDisplay(ProgressSettings settings) {
        return ProgressDisplay.of(settings);
    }
}
