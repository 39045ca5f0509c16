package ai.chalk.compute.progress;

import java.util.Locale;

/**
 * Whether progress is shown: the {@code CHALK_SANDBOX_TUI} environment variable and the Spring
 * property {@code chalk.compute.tui} take these values.
 *
 * <p>Terminal detection decides colour, never visibility: progress is shown by default in
 * terminals, in redirected output and in captured scripts alike.
 */
public enum ProgressMode {

    /** The default: progress is shown. Written {@code auto}, or leave the variable unset. */
    AUTO,

    /** Progress is shown, also where it would not be by default. Written {@code true}, {@code 1} or {@code on}. */
    ON,

    /** Nothing is shown; the same events still reach the SLF4J loggers. Written {@code false}, {@code 0} or {@code off}. */
    OFF;

    /**
     * Reads a mode as written in {@code CHALK_SANDBOX_TUI}: {@code true}/{@code 1}/{@code on},
     * {@code false}/{@code 0}/{@code off}, or {@code auto}; case and surrounding blanks do not matter,
     * and {@code null} or a blank value means {@link #AUTO}.
     *
     * @param value the text to read
     * @return the mode
     * @throws IllegalArgumentException when the text is none of the accepted values
     */
    public static ProgressMode parse(String value) {
        if (value == null) {
            return AUTO;
        }
        return switch (value.strip().toLowerCase(Locale.ROOT)) {
            case "", "auto" -> AUTO;
            case "true", "1", "on" -> ON;
            case "false", "0", "off" -> OFF;
            default ->
                throw new IllegalArgumentException(
                        "not a progress mode: '" + value + "' (use true, 1, false, 0 or auto)");
        };
    }
}
