package ai.chalk.compute.progress;

import java.io.Console;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How progress is shown: whether at all, and whether in colour.
 *
 * <p>Read from the environment, then adjusted by explicit choices such as the Spring properties
 * {@code chalk.compute.tui} and {@code chalk.compute.color}:
 * <pre>{@code
 * ProgressSettings settings = ProgressSettings.fromEnv().overriddenBy(ProgressMode.AUTO, ColorMode.NEVER);
 * ProgressDisplay progress = ProgressDisplay.of(settings);
 * }</pre>
 *
 * @param mode         whether progress is shown ({@value #ENV_TUI})
 * @param color        the colour choice
 * @param terminal     whether the output is an interactive terminal
 * @param noColor      whether {@value #ENV_NO_COLOR} is set to a non-empty value
 * @param dumbTerminal whether {@code TERM=dumb}
 * @param ci           whether {@value #ENV_CI} is set, that is running under continuous integration
 */
public record ProgressSettings(
        ProgressMode mode, ColorMode color, boolean terminal, boolean noColor, boolean dumbTerminal, boolean ci) {

    /** The SDK's environment variable that switches progress: {@code true}/{@code 1}, {@code false}/{@code 0} or {@code auto}. */
    public static final String ENV_TUI = "CHALK_SANDBOX_TUI";
    /** The environment variable that, set to any non-empty value, turns colour off (see no-color.org). */
    public static final String ENV_NO_COLOR = "NO_COLOR";
    /** The environment variable naming the terminal type; {@code dumb} turns colour off. */
    public static final String ENV_TERM = "TERM";
    /** The environment variable CI systems set; any value but empty, {@code false} or {@code 0} turns colour off. */
    public static final String ENV_CI = "CI";

    private static final Logger log = LoggerFactory.getLogger(ProgressSettings.class);

    /** Validates the settings. */
    public ProgressSettings {
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(color, "color");
    }

    /**
     * Settings from the process environment and from whether stderr is an interactive terminal;
     * see {@link #fromEnv(Map)}.
     *
     * @return the settings
     */
    public static ProgressSettings fromEnv() {
        return fromEnv(System.getenv());
    }

    /**
     * Settings from environment variables: {@value #ENV_TUI} for the mode (an unreadable value is
     * reported as a warning and treated as {@code auto}), {@value #ENV_NO_COLOR}, {@code TERM} and
     * {@value #ENV_CI} for colour. Whether the output is an interactive terminal is detected for the
     * process's stderr; fix it with {@link #withTerminal(boolean)} when writing elsewhere.
     *
     * @param env the environment variables to read
     * @return the settings, with colour {@link ColorMode#AUTO}
     */
    public static ProgressSettings fromEnv(Map<String, String> env) {
        Objects.requireNonNull(env, "env");
        ProgressMode mode;
        try {
            mode = ProgressMode.parse(env.get(ENV_TUI));
        } catch (IllegalArgumentException e) {
            log.warn("{} ignored: {}", ENV_TUI, e.getMessage());
            mode = ProgressMode.AUTO;
        }
        String noColor = env.get(ENV_NO_COLOR);
        String term = env.get(ENV_TERM);
        String ci = env.get(ENV_CI);
        return new ProgressSettings(
                mode,
                ColorMode.AUTO,
                stderrIsTerminal(),
                noColor != null && !noColor.isEmpty(),
                term != null && term.strip().equalsIgnoreCase("dumb"),
                ci != null
                        && !ci.isBlank()
                        && !ci.strip().equals("0")
                        && !ci.strip().equalsIgnoreCase("false"));
    }

    /**
     * These settings with explicit choices applied, such as the Spring properties
     * {@code chalk.compute.tui} and {@code chalk.compute.color}. {@code AUTO} keeps the current choice,
     * so that {@value #ENV_TUI} still applies when the property is left at its default.
     *
     * @param tui   whether to show progress, or {@code AUTO} to keep the current choice
     * @param color whether to colour it, or {@code AUTO} to keep the current choice
     * @return new settings
     */
    public ProgressSettings overriddenBy(ProgressMode tui, ColorMode color) {
        Objects.requireNonNull(tui, "tui");
        Objects.requireNonNull(color, "color");
        return new ProgressSettings(
                tui == ProgressMode.AUTO ? mode : tui,
                color == ColorMode.AUTO ? this.color : color,
                terminal,
                noColor,
                dumbTerminal,
                ci);
    }

    /**
     * These settings for an output that is, or is not, an interactive terminal, for example to
     * show progress in a terminal the JVM cannot detect, or in tests.
     *
     * @param terminal whether the output is an interactive terminal
     * @return new settings
     */
    public ProgressSettings withTerminal(boolean terminal) {
        return new ProgressSettings(mode, color, terminal, noColor, dumbTerminal, ci);
    }

    /** Whether progress is shown: everything but {@link ProgressMode#OFF}. */
    public boolean enabled() {
        return mode != ProgressMode.OFF;
    }

    /**
     * Whether output is coloured: always with {@link ColorMode#ALWAYS}, never with {@link ColorMode#NEVER},
     * and with {@link ColorMode#AUTO} only on an interactive terminal without {@code NO_COLOR},
     * {@code TERM=dumb} or {@code CI}.
     */
    public boolean colored() {
        return switch (color) {
            case ALWAYS -> true;
            case NEVER -> false;
            case AUTO -> terminal && !noColor && !dumbTerminal && !ci;
        };
    }

    /**
     * Whether the process's stderr is an interactive terminal. {@code System.console()} answers for
     * stdin and stdout (and, from JDK 22, exists even when they are redirected, so {@code isTerminal()}
     * is asked too); on Linux stderr itself is checked as well.
     */
    private static boolean stderrIsTerminal() {
        Console console = System.console();
        if (console == null) {
            return false;
        }
        try {
            Method isTerminal = Console.class.getMethod("isTerminal");
            if (!(Boolean) isTerminal.invoke(console)) {
                return false;
            }
        } catch (NoSuchMethodException e) {
            // before JDK 22 a console exists only for a terminal
        } catch (ReflectiveOperationException | RuntimeException e) {
            return false;
        }
        Path stderr = Path.of("/proc/self/fd/2");
        if (Files.isSymbolicLink(stderr)) {
            try {
                String device = Files.readSymbolicLink(stderr).toString().toLowerCase(Locale.ROOT);
                return device.startsWith("/dev/pts/") || device.startsWith("/dev/tty") || device.equals("/dev/console");
            } catch (IOException | UnsupportedOperationException | SecurityException e) {
                return true;
            }
        }
        return true;
    }
}
