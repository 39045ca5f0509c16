package ai.chalk.compute.sandbox;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * What a finished command printed and how it ended.
 *
 * <pre>{@code
 * ExecResult result = sandbox.exec("ls", "-la", "/tmp");
 * for (String line : result.stdout()) { ... }
 * if (!result.success()) {
 *     System.err.println("exit code " + result.exitCode() + ": " + result.stderrText());
 * }
 * }</pre>
 *
 * <p>A non-zero exit is a result like any other, never an exception. Output written to a PTY is
 * reported as stdout.
 *
 * @param stdoutBytes everything the command wrote to standard output
 * @param stderrBytes everything the command wrote to standard error
 * @param exitCode    the exit code, or 128 + the signal number when a signal ended the command
 *                    (the shell's convention)
 * @param signal      the signal that ended the command, if one did
 */
public record ExecResult(byte[] stdoutBytes, byte[] stderrBytes, int exitCode, OptionalInt signal)
        implements ai.chalk.compute.sandbox.spi.CommandOutcome {

    /** Creates a result; the byte arrays are copied. */
    public ExecResult {
        stdoutBytes = stdoutBytes.clone();
        stderrBytes = stderrBytes.clone();
        Objects.requireNonNull(signal, "signal");
    }

    /** Everything written to standard output (a copy). */
    @Override
    public byte[] stdoutBytes() {
        return stdoutBytes.clone();
    }

    /** Everything written to standard error (a copy). */
    @Override
    public byte[] stderrBytes() {
        return stderrBytes.clone();
    }

    /** Standard output decoded as UTF-8. */
    public String stdoutText() {
        return new String(stdoutBytes, StandardCharsets.UTF_8);
    }

    /** Standard error decoded as UTF-8. */
    public String stderrText() {
        return new String(stderrBytes, StandardCharsets.UTF_8);
    }

    /** The lines of standard output, split on {@code \n}, without a trailing empty line. */
    public List<String> stdout() {
        return lines(stdoutText());
    }

    /** The lines of standard error, split on {@code \n}, without a trailing empty line. */
    public List<String> stderr() {
        return lines(stderrText());
    }

    /** Whether the command exited normally with code 0. */
    public boolean success() {
        return exitCode == 0 && signal.isEmpty();
    }

    static List<String> lines(String text) {
        if (text.isEmpty()) {
            return List.of();
        }
        String[] parts = text.split("\n", -1);
        int n = parts[parts.length - 1].isEmpty() ? parts.length - 1 : parts.length;
        return List.of(Arrays.copyOf(parts, n));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ExecResult other
                && exitCode == other.exitCode
                && signal.equals(other.signal)
                && Arrays.equals(stdoutBytes, other.stdoutBytes)
                && Arrays.equals(stderrBytes, other.stderrBytes);
    }

    @Override
    public int hashCode() {
        return Objects.hash(exitCode, signal, Arrays.hashCode(stdoutBytes), Arrays.hashCode(stderrBytes));
    }

    @Override
    public String toString() {
        return "ExecResult[exitCode=" + exitCode
                + (signal.isPresent() ? ", signal=" + signal.getAsInt() : "")
                + ", stdout=" + stdoutBytes.length + " bytes, stderr=" + stderrBytes.length + " bytes]";
    }
}
