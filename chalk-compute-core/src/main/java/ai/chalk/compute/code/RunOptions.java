package ai.chalk.compute.code;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Consumer;

/**
 * How one {@link CodeSandbox#runCode(String, RunOptions)} runs: callbacks for output as it comes, a timeout, and for
 * Python the chart capture and the artifact limit. Immutable; each {@code with...} returns a copy.
 *
 * <pre>{@code
 * sandbox.runCode("for i in range(5): print(f'Step {i}')",
 *         RunOptions.defaults().onStdout(m -> System.out.println("[stdout] " + m.line())));
 * }</pre>
 */
public final class RunOptions {

    private static final Consumer<OutputMessage> IGNORE = m -> {};

    private final Consumer<OutputMessage> onStdout;
    private final Consumer<OutputMessage> onStderr;
    private final Optional<Duration> timeout;
    private final boolean captureCharts;
    private final OptionalLong maxArtifactBytes;
    private final Map<String, String> env;
    private final Optional<String> workdir;

    private RunOptions(
            Consumer<OutputMessage> onStdout,
            Consumer<OutputMessage> onStderr,
            Optional<Duration> timeout,
            boolean captureCharts,
            OptionalLong maxArtifactBytes,
            Map<String, String> env,
            Optional<String> workdir) {
        this.onStdout = onStdout;
        this.onStderr = onStderr;
        this.timeout = timeout;
        this.captureCharts = captureCharts;
        this.maxArtifactBytes = maxArtifactBytes;
        this.env = Map.copyOf(env);
        this.workdir = workdir;
    }

    /** No callbacks, the sandbox's timeout, charts captured, the server's artifact limit. */
    public static RunOptions defaults() {
        return new RunOptions(IGNORE, IGNORE, Optional.empty(), true, OptionalLong.empty(), Map.of(), Optional.empty());
    }

    /** Calls {@code callback} with each line of stdout as it comes (on a gRPC thread: return quickly). */
    public RunOptions onStdout(Consumer<OutputMessage> callback) {
        return new RunOptions(
                Objects.requireNonNull(callback), onStderr, timeout, captureCharts, maxArtifactBytes, env, workdir);
    }

    /** Calls {@code callback} with each line of stderr as it comes. */
    public RunOptions onStderr(Consumer<OutputMessage> callback) {
        return new RunOptions(
                onStdout, Objects.requireNonNull(callback), timeout, captureCharts, maxArtifactBytes, env, workdir);
    }

    /**
     * Stops the snippet after {@code timeout} (a KeyboardInterrupt for Python; the state is kept when it stops);
     * the result then has {@code executionOk} false. Overrides {@link SandboxConfig.Builder#timeout(Duration)}.
     */
    public RunOptions timeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        return new RunOptions(onStdout, onStderr, Optional.of(timeout), captureCharts, maxArtifactBytes, env, workdir);
    }

    /** Whether open matplotlib figures become PNG results when a Python snippet ends (default true). */
    public RunOptions captureCharts(boolean capture) {
        return new RunOptions(onStdout, onStderr, timeout, capture, maxArtifactBytes, env, workdir);
    }

    /** Results larger than this are not sent but listed in {@link ExecutionResult#skippedArtifacts()}. */
    public RunOptions maxArtifactBytes(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("maxArtifactBytes must not be negative, got " + bytes);
        }
        return new RunOptions(onStdout, onStderr, timeout, captureCharts, OptionalLong.of(bytes), env, workdir);
    }

    /** An environment variable set while this snippet runs (and restored after it). */
    public RunOptions env(String name, String value) {
        Map<String, String> more = new LinkedHashMap<>(env);
        more.put(name, value);
        return new RunOptions(onStdout, onStderr, timeout, captureCharts, maxArtifactBytes, more, workdir);
    }

    /** The directory this snippet runs in (and leaves after it). */
    public RunOptions workdir(String workdir) {
        return new RunOptions(onStdout, onStderr, timeout, captureCharts, maxArtifactBytes, env, Optional.of(workdir));
    }

    Consumer<OutputMessage> stdoutCallback() {
        return onStdout;
    }

    Consumer<OutputMessage> stderrCallback() {
        return onStderr;
    }

    Optional<Duration> timeoutOption() {
        return timeout;
    }

    boolean charts() {
        return captureCharts;
    }

    OptionalLong artifactLimit() {
        return maxArtifactBytes;
    }

    Map<String, String> envVars() {
        return env;
    }

    Optional<String> workdirOption() {
        return workdir;
    }
}
