package ai.chalk.compute.progress;

/**
 * Whether progress and failure reports are coloured; the Spring property {@code chalk.compute.color}
 * takes these values. Colour is ANSI SGR only and never changes the text itself.
 */
public enum ColorMode {

    /**
     * The default: colour on an interactive terminal only, and never when {@code NO_COLOR} is set,
     * {@code TERM=dumb}, {@code CI} is set, or the output is redirected.
     */
    AUTO,

    /** Always colour, even into a file or pipe; an explicit choice that also outranks {@code NO_COLOR}. */
    ALWAYS,

    /** Never colour. */
    NEVER
}
