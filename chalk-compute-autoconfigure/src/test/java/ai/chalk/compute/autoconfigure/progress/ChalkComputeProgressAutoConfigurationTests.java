package ai.chalk.compute.autoconfigure.progress;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.autoconfigure.TestEnvironment;
import ai.chalk.compute.progress.ColorMode;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressMode;
import ai.chalk.compute.progress.ProgressSettings;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** {@code chalk.compute.tui} and {@code chalk.compute.color} over {@code CHALK_SANDBOX_TUI} and {@code NO_COLOR}. */
class ChalkComputeProgressAutoConfigurationTests {

    @TempDir
    Path home;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ChalkComputeProgressAutoConfiguration.class));

    private ApplicationContextRunner env(Map<String, Object> variables) {
        return runner.withInitializer(TestEnvironment.of(variables, home));
    }

    @Test
    void byDefaultProgressIsShown() {
        env(Map.of()).run(context -> {
            ProgressSettings settings = context.getBean(ProgressSettings.class);
            assertThat(settings.mode()).isEqualTo(ProgressMode.AUTO);
            assertThat(settings.enabled()).isTrue();
            assertThat(context.getBean(ProgressDisplay.class).settings()).isSameAs(settings);
        });
    }

    @Test
    void theUsersDisplayWins() {
        ProgressDisplay mine = ProgressDisplay.of(ProgressSettings.fromEnv(Map.of()), System.err);
        env(Map.of())
                .withBean(ProgressDisplay.class, () -> mine)
                .run(context ->
                        assertThat(context.getBean(ProgressDisplay.class)).isSameAs(mine));
    }

    @Test
    void theEnvironmentVariableSwitchesItOff() {
        env(Map.of("CHALK_SANDBOX_TUI", "0"))
                .run(context -> assertThat(
                                context.getBean(ProgressSettings.class).enabled())
                        .isFalse());
    }

    @Test
    void thePropertyWinsOverTheEnvironmentVariable() {
        env(Map.of("CHALK_SANDBOX_TUI", "false"))
                .withPropertyValues("chalk.compute.tui=true")
                .run(context -> assertThat(
                                context.getBean(ProgressSettings.class).mode())
                        .isEqualTo(ProgressMode.ON));
        env(Map.of("CHALK_SANDBOX_TUI", "true"))
                .withPropertyValues("chalk.compute.tui=false")
                .run(context -> assertThat(
                                context.getBean(ProgressSettings.class).enabled())
                        .isFalse());
    }

    @Test
    void noColorTurnsColourOffUnlessThePropertySaysAlways() {
        env(Map.of("NO_COLOR", "1")).run(context -> {
            ProgressSettings settings = context.getBean(ProgressSettings.class);
            assertThat(settings.noColor()).isTrue();
            assertThat(settings.withTerminal(true).colored()).isFalse();
        });
        env(Map.of("NO_COLOR", "1"))
                .withPropertyValues("chalk.compute.color=always")
                .run(context -> assertThat(
                                context.getBean(ProgressSettings.class).colored())
                        .isTrue());
        env(Map.of()).withPropertyValues("chalk.compute.color=never").run(context -> {
            ProgressSettings settings = context.getBean(ProgressSettings.class);
            assertThat(settings.color()).isEqualTo(ColorMode.NEVER);
            assertThat(settings.withTerminal(true).colored()).isFalse();
        });
    }
}
