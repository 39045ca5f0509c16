package ai.chalk.compute.git;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;
import java.util.List;
import java.util.Objects;

/**
 * A git command run by {@link SandboxGit} failed: it exited with a non-zero status, or ran longer than
 * the helper's timeout. Carries the command, its exit code and what it printed; any password given
 * to the helper (and any password in a URL) is replaced by {@code ****} in all of them.
 *
 * <pre>{@code
 * try {
 *     sandbox.git().pull("repo");
 * } catch (GitException e) {
 *     System.err.println(e.command() + " exited with " + e.exitCode() + ": " + e.stderr());
 * }
 * }</pre>
 *
 * <p>Its {@linkplain #statusCode() status code} is {@code DEADLINE_EXCEEDED} when the command timed
 * out, {@code UNKNOWN} otherwise. Failures to reach the server or the sandbox, or to start git at all
 * (a sandbox image without git: the server reports the command as not found), are not {@code GitException}s
 * but the usual {@link ChalkComputeException}s.
 */
public class GitException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    private final List<String> command;
    private final int exitCode;
    private final String stderr;
    private final String stdout;
    private final boolean timedOut;

    /**
     * Creates the exception; the texts must already have their secrets masked.
     *
     * @param command  the git command line, secrets masked
     * @param exitCode its exit status (128 + the signal number when a signal ended it)
     * @param stderr   what it wrote to standard error, secrets masked
     * @param stdout   what it wrote to standard output, secrets masked
     * @param timedOut whether it was killed because it ran longer than the timeout
     * @param cause    the underlying exception, or {@code null}
     */
    public GitException(
            List<String> command, int exitCode, String stderr, String stdout, boolean timedOut, Throwable cause) {
        super(
                timedOut ? Status.Code.DEADLINE_EXCEEDED : Status.Code.UNKNOWN,
                describe(command, exitCode, stderr, stdout, timedOut),
                cause);
        this.command = List.copyOf(command);
        this.exitCode = exitCode;
        this.stderr = Objects.requireNonNullElse(stderr, "");
        this.stdout = Objects.requireNonNullElse(stdout, "");
        this.timedOut = timedOut;
    }

    /** The command that failed, starting with {@code git}, with passwords masked. */
    public List<String> command() {
        return command;
    }

    /** Its exit status; 137 when it was killed because it timed out. */
    public int exitCode() {
        return exitCode;
    }

    /** What git wrote to standard error, with passwords masked. */
    public String stderr() {
        return stderr;
    }

    /** What git wrote to standard output, with passwords masked (some failures are only reported there). */
    public String stdout() {
        return stdout;
    }

    /** Whether the command was killed because it ran longer than the helper's timeout. */
    public boolean timedOut() {
        return timedOut;
    }

    private static String describe(List<String> command, int exitCode, String stderr, String stdout, boolean timedOut) {
        String details = stderr == null || stderr.isBlank() ? (stdout == null ? "" : stdout.strip()) : stderr.strip();
        return String.join(" ", command)
                + (timedOut ? " timed out" : " failed with exit code " + exitCode)
                + (details.isEmpty() ? "" : ": " + details);
    }
}
