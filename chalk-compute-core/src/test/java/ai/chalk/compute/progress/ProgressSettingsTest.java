package ai.chalk.compute.progress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ProgressSettingsTest {

    @Test
    void progressIsShownByDefault() {
        ProgressSettings settings = ProgressSettings.fromEnv(Map.of());
        assertThat(settings.mode()).isEqualTo(ProgressMode.AUTO);
        assertThat(settings.enabled()).isTrue();
        assertThat(settings.withTerminal(false).enabled())
                .as("terminal detection decides colour, not visibility")
                .isTrue();
    }

    @Test
    void tuiVariableTakesTheSdksValues() {
        assertThat(mode("true")).isEqualTo(ProgressMode.ON);
        assertThat(mode("1")).isEqualTo(ProgressMode.ON);
        assertThat(mode("TRUE ")).isEqualTo(ProgressMode.ON);
        assertThat(mode("false")).isEqualTo(ProgressMode.OFF);
        assertThat(mode("0")).isEqualTo(ProgressMode.OFF);
        assertThat(mode("auto")).isEqualTo(ProgressMode.AUTO);
        assertThat(mode("")).isEqualTo(ProgressMode.AUTO);
        assertThat(mode("sometimes"))
                .as("an unreadable value warns and keeps the default")
                .isEqualTo(ProgressMode.AUTO);
        assertThat(ProgressSettings.fromEnv(Map.of("CHALK_SANDBOX_TUI", "0")).enabled())
                .isFalse();
        assertThatThrownBy(() -> ProgressMode.parse("sometimes"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("true, 1, false, 0 or auto");
    }

    @Test
    void explicitChoicesOverrideTheEnvironmentButAutoKeepsIt() {
        ProgressSettings off = ProgressSettings.fromEnv(Map.of("CHALK_SANDBOX_TUI", "false"));
        assertThat(off.overriddenBy(ProgressMode.AUTO, ColorMode.AUTO).enabled())
                .isFalse();
        assertThat(off.overriddenBy(ProgressMode.ON, ColorMode.AUTO).enabled()).isTrue();
        ProgressSettings on = ProgressSettings.fromEnv(Map.of());
        assertThat(on.overriddenBy(ProgressMode.OFF, ColorMode.AUTO).enabled()).isFalse();
        assertThat(on.overriddenBy(ProgressMode.AUTO, ColorMode.NEVER)
                        .overriddenBy(ProgressMode.AUTO, ColorMode.AUTO)
                        .color())
                .isEqualTo(ColorMode.NEVER);
    }

    @Test
    void colourNeedsATerminalAndNoOptOut() {
        assertThat(ProgressSettings.fromEnv(Map.of()).withTerminal(true).colored())
                .isTrue();
        assertThat(ProgressSettings.fromEnv(Map.of()).withTerminal(false).colored())
                .isFalse();
        assertThat(colored(Map.of("NO_COLOR", "1"))).isFalse();
        assertThat(colored(Map.of("NO_COLOR", "anything"))).isFalse();
        assertThat(colored(Map.of("NO_COLOR", "")))
                .as("an empty NO_COLOR is unset")
                .isTrue();
        assertThat(colored(Map.of("TERM", "dumb"))).isFalse();
        assertThat(colored(Map.of("TERM", "xterm-256color"))).isTrue();
        assertThat(colored(Map.of("CI", "true"))).isFalse();
        assertThat(colored(Map.of("CI", "1"))).isFalse();
        assertThat(colored(Map.of("CI", "false"))).isTrue();
    }

    @Test
    void testsRunWithoutATerminal() {
        // surefire's forked JVM has pipes, not a terminal, for its standard streams
        assertThat(ProgressSettings.fromEnv(Map.of()).terminal()).isFalse();
    }

    private static ProgressMode mode(String value) {
        return ProgressSettings.fromEnv(Map.of("CHALK_SANDBOX_TUI", value)).mode();
    }

    private static boolean colored(Map<String, String> env) {
        return ProgressSettings.fromEnv(env).withTerminal(true).colored();
    }
}
