package ai.chalk.compute.progress;

import java.io.PrintStream;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shows the progress of long operations on stderr, in the Chalk SDK's format:
 * <pre>
 * Function "fraud"
 *   │ › Registering function
 *   │ ✓ Function registered
 *   │ › Waiting for readiness
 *   │ › Pending ready=0 available=0
 *   │ › Pending ready=0 available=0 — waiting for startup probe
 *   └ ✓ Ready
 * </pre>
 * Each operation {@linkplain #open(String) opens a group} and reports to it:
 * <pre>{@code
 * ProgressDisplay progress = ProgressDisplay.fromEnv();
 * try (ProgressGroup group = progress.open("Function \"fraud\"")) {
 *     group.step("Registering function");
 *     ...
 *     group.succeed("Ready");
 * }
 * }</pre>
 *
 * <p>Lines are only ever appended, never rewritten, and each is written in one piece. Several groups
 * may be open at once, from different threads; when a group's line follows another group's, its
 * heading is repeated with {@code (continued)}. All displays writing to stderr share that bookkeeping.
 * Output never goes to stdout.
 *
 * <p>Whether anything is shown and whether it is coloured comes from {@link ProgressSettings}
 * ({@code CHALK_SANDBOX_TUI}, {@code NO_COLOR}, ...). Every event is also logged through SLF4J under the logger
 * {@code ai.chalk.compute.progress.ProgressDisplay}, once: a failure at WARN; a step or a success at INFO when the
 * display is off (the log is then the only place it shows) and at DEBUG while the display shows it, so that a
 * console with both does not print each step twice; a repeated unchanged step at DEBUG.
 */
public final class ProgressDisplay {

    /** The logger of every progress event. */
    static final Logger LOG = LoggerFactory.getLogger(ProgressDisplay.class);

    private final ProgressSettings settings;
    private final ProgressOutput output;

    private ProgressDisplay(ProgressSettings settings, ProgressOutput output) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.output = output;
    }

    /**
     * A display on stderr configured from the environment, see {@link ProgressSettings#fromEnv()}.
     *
     * @return the display
     */
    public static ProgressDisplay fromEnv() {
        return of(ProgressSettings.fromEnv());
    }

    /**
     * A display on the process's stderr ({@code System.err}, looked up at each line).
     *
     * @param settings whether and how to show progress
     * @return the display
     */
    public static ProgressDisplay of(ProgressSettings settings) {
        return new ProgressDisplay(settings, ProgressOutput.stderr());
    }

    /**
     * A display on another stream, for example to capture progress in a test. Whether the stream is
     * a terminal is taken from {@link ProgressSettings#terminal()}.
     *
     * @param settings whether and how to show progress
     * @param target   where to write
     * @return the display
     */
    public static ProgressDisplay of(ProgressSettings settings, PrintStream target) {
        return new ProgressDisplay(settings, ProgressOutput.to(target));
    }

    /** The settings this display follows. */
    public ProgressSettings settings() {
        return settings;
    }

    /**
     * Opens a group for one operation. Nothing is printed until its first step.
     *
     * @param heading what the operation is about, for example {@code Function "fraud"},
     *                {@code Sandbox "abc"} or {@code Image build "python:3.12"}
     * @return the group, to report steps to and to close
     */
    public ProgressGroup open(String heading) {
        return new ProgressGroup(heading, settings, output);
    }

    @Override
    public String toString() {
        return "ProgressDisplay[" + settings + "]";
    }
}
