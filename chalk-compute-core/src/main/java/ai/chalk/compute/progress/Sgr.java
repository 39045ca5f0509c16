package ai.chalk.compute.progress;

/** The ANSI SGR attributes progress uses; each wraps text and resets after it, so the text itself never changes. */
enum Sgr {
    BOLD(1),
    DIM(2),
    RED(31),
    GREEN(32),
    CYAN(36);

    private static final String RESET = "\u001B[0m";
    private final String start;

    Sgr(int code) {
        this.start = "\u001B[" + code + "m";
    }

    /** The text in this attribute when {@code color} is set, else the text unchanged. */
    String apply(String text, boolean color) {
        return color ? start + text + RESET : text;
    }
}
