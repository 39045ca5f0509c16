package ai.chalk.compute.progress;

/** The four kinds of line under a group's heading, each with its guide and mark. */
enum LineKind {
    /** {@code │ › text}: a step in progress. */
    STEP("│", "›", Sgr.CYAN),
    /** {@code │ ✓ text}: an intermediate step completed. */
    COMPLETED("│", "✓", Sgr.GREEN),
    /** {@code └ ✓ text}: the group's operation succeeded. */
    SUCCEEDED("└", "✓", Sgr.GREEN),
    /** {@code └ ✗ text}: the group's operation failed. */
    FAILED("└", "✗", Sgr.RED);

    private final String guide;
    private final String mark;
    private final Sgr markColor;

    LineKind(String guide, String mark, Sgr markColor) {
        this.guide = guide;
        this.mark = mark;
        this.markColor = markColor;
    }

    /** Whether this line closes its group. */
    boolean closes() {
        return this == SUCCEEDED || this == FAILED;
    }

    /** The whole line, ending in {@code \n}. */
    String render(String text, boolean color) {
        return "  " + Sgr.DIM.apply(guide, color) + " " + markColor.apply(mark, color) + " " + text + "\n";
    }
}
