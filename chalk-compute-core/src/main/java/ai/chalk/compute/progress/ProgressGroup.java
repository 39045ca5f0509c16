package ai.chalk.compute.progress;

import java.util.Objects;
import org.slf4j.Logger;

/**
 * The progress of one long operation: a heading such as {@code Function "fraud"}, its steps under
 * a vertical guide, and a closing line.
 *
 * <pre>{@code
 * try (ProgressGroup group = progress.open("Function \"fraud\"")) {
 *     group.step("Registering function");          //   │ › Registering function
 *     group.completed("Function registered");      //   │ ✓ Function registered
 *     group.step("Pending ready=0 available=0");   //   │ › Pending ready=0 available=0
 *     group.step("Pending ready=0 available=0");   //   (unchanged: not printed again)
 *     group.succeed("Ready");                      //   └ ✓ Ready
 * }
 * }</pre>
 *
 * <p>A step is printed only when it differs from the group's previous line, so a polling loop may
 * report its status on every poll. Lines are only ever appended. The heading is printed with the
 * group's first line, and again, followed by {@code (continued)}, when another group printed in between.
 * Once the group is closed, further reports are ignored. Safe to use from several threads.
 */
public final class ProgressGroup implements AutoCloseable {

    /** The closing text when a group is closed without {@link #succeed} or {@link #fail}. */
    static final String NOT_FINISHED = "Did not finish";

    private static final Logger log = ProgressDisplay.LOG;

    private final String heading;
    private final ProgressSettings settings;
    private final ProgressOutput output;
    // guarded by output.lock
    private boolean headingShown;
    private String lastLine;
    private boolean finished;

    ProgressGroup(String heading, ProgressSettings settings, ProgressOutput output) {
        this.heading = clean(Objects.requireNonNull(heading, "heading"));
        this.settings = settings;
        this.output = output;
    }

    /** The heading, for example {@code Function "fraud"}. */
    public String heading() {
        return heading;
    }

    /** Whether the group has been closed, by {@link #succeed}, {@link #fail} or {@link #close}. */
    public boolean isFinished() {
        output.lock.lock();
        try {
            return finished;
        } finally {
            output.lock.unlock();
        }
    }

    /**
     * Reports a step in progress, {@code │ › text}, unless it is the group's previous line again.
     *
     * @param text what is happening, for example {@code Waiting for readiness}
     */
    public void step(String text) {
        report(LineKind.STEP, text, false);
    }

    /**
     * Reports an intermediate step completed, {@code │ ✓ text}, unless it is the group's previous line again.
     *
     * @param text what was done, for example {@code Function registered}
     */
    public void completed(String text) {
        report(LineKind.COMPLETED, text, false);
    }

    /**
     * Closes the group with success, {@code └ ✓ text}.
     *
     * @param text the outcome, for example {@code Ready}
     */
    public void succeed(String text) {
        report(LineKind.SUCCEEDED, text, false);
    }

    /**
     * Closes the group with failure, {@code └ ✗ text}.
     *
     * @param text what went wrong, for example the failure's message
     */
    public void fail(String text) {
        report(LineKind.FAILED, text, false);
    }

    /** Closes the group with {@code └ ✗ Did not finish} unless it already succeeded or failed. */
    @Override
    public void close() {
        report(LineKind.FAILED, NOT_FINISHED, true);
    }

    /** The heading line, marked as continued when the heading was printed before. The caller holds the lock. */
    String headingLine(boolean color) {
        String line =
                Sgr.BOLD.apply(heading, color) + (headingShown ? Sgr.DIM.apply(" (continued)", color) : "") + "\n";
        headingShown = true;
        return line;
    }

    private void report(LineKind kind, String text, boolean onlyIfOpen) {
        String clean = clean(Objects.requireNonNull(text, "text"));
        String plain = kind.render(clean, false);
        boolean changed;
        output.lock.lock();
        try {
            if (finished) {
                if (!onlyIfOpen) {
                    log.debug("{}: {} (ignored: already finished)", heading, clean);
                }
                return;
            }
            changed = kind.closes() || !plain.equals(lastLine);
            if (changed) {
                lastLine = plain;
                finished = kind.closes();
                if (settings.enabled()) {
                    boolean color = settings.colored();
                    output.write(this, color ? kind.render(clean, true) : plain, kind.closes(), color);
                }
            }
        } finally {
            output.lock.unlock();
        }
        if (kind == LineKind.FAILED && changed) {
            log.warn("{}: {}", heading, clean);
        } else if (changed && !settings.enabled()) {
            log.info("{}: {}", heading, clean); // the log is the only place this shows
        } else {
            log.debug("{}: {}", heading, clean); // shown on the display already, or unchanged: once is enough
        }
    }

    /** Replaces control characters (line breaks, escapes) with spaces: one report is one line, and never markup. */
    private static String clean(String text) {
        StringBuilder out = new StringBuilder(text.length());
        text.codePoints().forEach(c -> out.appendCodePoint(Character.isISOControl(c) ? ' ' : c));
        return out.toString().strip();
    }

    @Override
    public String toString() {
        return "ProgressGroup[" + heading + "]";
    }
}
