package ai.chalk.compute.progress;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where background work reports a failure that no caller will observe, for example a deployment
 * started at application startup that nothing waits for.
 *
 * <p>Each report is written to stderr at once, whatever the log configuration and whether progress
 * is shown, and logged as an ERROR with its stack trace. A failure of the Chalk Compute service
 * ({@link ChalkComputeException}) is explained by its status code and the server's message; any other
 * exception with its full stack trace:
 * <pre>
 * ✗ Unobserved background failure: Deploying function "fraud"
 *   ALREADY_EXISTS: function "fraud" already exists
 * </pre>
 * A program that only deploys ends unsuccessfully when anything failed:
 * <pre>{@code
 * deployAll();   // starts background deployments and waits for them
 * if (BackgroundFailures.shared().hasUnobservedFailures()) {
 *     System.exit(1);
 * }
 * }</pre>
 */
public final class BackgroundFailures {

    private static final Logger log = LoggerFactory.getLogger(BackgroundFailures.class);
    private static final BackgroundFailures SHARED =
            new BackgroundFailures(ProgressOutput.stderr(), ProgressSettings.fromEnv());

    private final ProgressOutput output;
    private final ProgressSettings settings;
    private final List<BackgroundFailure> failures = new CopyOnWriteArrayList<>();

    BackgroundFailures(ProgressOutput output, ProgressSettings settings) {
        this.output = output;
        this.settings = Objects.requireNonNull(settings, "settings");
    }

    /**
     * The process-wide reporter, writing to {@code System.err} and coloured as
     * {@link ProgressSettings#fromEnv()} says. A progress step printed after a report repeats its
     * group's heading, followed by {@code (continued)}.
     *
     * @return the shared reporter
     */
    public static BackgroundFailures shared() {
        return SHARED;
    }

    /**
     * A reporter writing to another stream, for example to capture reports in a test.
     *
     * @param target   where to write
     * @param settings whether to colour the report ({@link ProgressSettings#colored()}); whether
     *                 progress is shown does not matter
     * @return a new reporter with no failures
     */
    public static BackgroundFailures to(PrintStream target, ProgressSettings settings) {
        return new BackgroundFailures(ProgressOutput.to(target), settings);
    }

    /**
     * Reports a failure no caller will observe: writes its explanation to stderr, logs it as an ERROR,
     * and remembers it for {@link #hasUnobservedFailures()}.
     *
     * @param operation what was being done, for example {@code Deploying function "fraud"}
     * @param failure   why it failed
     */
    public void report(String operation, Throwable failure) {
        BackgroundFailure reported = new BackgroundFailure(operation, failure);
        failures.add(reported);
        output.writeOther(explain(reported, settings.colored()));
        log.error("Unobserved background failure: {}", operation, failure);
    }

    /** Whether any failure was reported; a program that only deploys should then exit unsuccessfully. */
    public boolean hasUnobservedFailures() {
        return !failures.isEmpty();
    }

    /** The failures reported so far, oldest first. */
    public List<BackgroundFailure> failures() {
        return List.copyOf(failures);
    }

    /** The whole explanation, every line ending in {@code \n}, details indented by two spaces. */
    static String explain(BackgroundFailure reported, boolean color) {
        StringBuilder text = new StringBuilder()
                .append(Sgr.RED.apply("✗", color))
                .append(' ')
                .append(Sgr.BOLD.apply("Unobserved background failure: " + reported.operation(), color))
                .append('\n');
        String details = reported.failure() instanceof ChalkComputeException known
                ? serviceFailure(known)
                : stackTrace(reported.failure());
        details.lines().forEach(line -> text.append("  ").append(line).append('\n'));
        return text.toString();
    }

    /** A service failure's message (status code and the server's text, recovery hints included), and its causes without frames. */
    private static String serviceFailure(ChalkComputeException failure) {
        StringBuilder text = new StringBuilder(failure.getMessage());
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        seen.add(failure);
        for (Throwable cause = failure.getCause(); cause != null && seen.add(cause); cause = cause.getCause()) {
            if (!(cause instanceof StatusRuntimeException || cause instanceof StatusException)) {
                text.append("\ncaused by: ").append(cause);
            }
        }
        return text.toString();
    }

    private static String stackTrace(Throwable failure) {
        StringWriter text = new StringWriter();
        failure.printStackTrace(new PrintWriter(text));
        return text.toString().replace("\t", "    ");
    }
}
