package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.grpc.RequestLimits;
import ai.chalk.compute.server.runtime.ProcessSpec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Validates what a client asks to run and turns it into a {@link ProcessSpec}. */
public final class ProcessRequests {

    /** Longest command line (command and arguments) accepted, in characters. */
    public static final int MAX_COMMAND_CHARS = 256 * 1024;

    private ProcessRequests() {}

    /** A validated process spec; INVALID_ARGUMENT names the field at fault. */
    public static ProcessSpec spec(
            String command,
            List<String> args,
            Optional<String> workdir,
            Map<String, String> env,
            Optional<ProcessSpec.TerminalSize> pty) {
        if (command == null || command.isBlank()) {
            throw ComputeException.invalid(
                    "command is required: give the program to run, e.g. \"echo\" with args [\"hello\"]");
        }
        long chars = command.length() + args.stream().mapToLong(String::length).sum();
        if (chars > MAX_COMMAND_CHARS) {
            throw ComputeException.invalid("command and args are " + chars + " characters; at most " + MAX_COMMAND_CHARS
                    + " are allowed: pass large input on stdin or in a file");
        }
        if (command.indexOf('\0') >= 0 || args.stream().anyMatch(a -> a.indexOf('\0') >= 0)) {
            throw ComputeException.invalid("command and args must not contain NUL characters");
        }
        workdir.ifPresent(w -> RequestLimits.checkWorkdir("workdir", w));
        RequestLimits.checkEnv("env", env);
        return new ProcessSpec(command, args, workdir.filter(w -> !w.isEmpty()), env, pty);
    }

    /** A terminal size; zero cells mean the conventional 80x24. */
    public static ProcessSpec.TerminalSize terminal(int cols, int rows) {
        if (cols < 0 || rows < 0 || cols > 10_000 || rows > 10_000) {
            throw ComputeException.invalid("pty_info " + cols + "x" + rows
                    + " is not a terminal size: give cols and rows between 1 and 10000");
        }
        return new ProcessSpec.TerminalSize(cols == 0 ? 80 : cols, rows == 0 ? 24 : rows);
    }

    /** A protobuf duration as a timeout; INVALID_ARGUMENT when it is malformed or absurdly long. */
    public static Optional<Duration> timeout(boolean present, com.google.protobuf.Duration value) {
        if (!present) {
            return Optional.empty();
        }
        try {
            return timeout(true, Duration.ofNanos(com.google.protobuf.util.Durations.toNanos(value)));
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw ComputeException.invalid("timeout " + value.getSeconds() + "s " + value.getNanos()
                    + "ns is not a valid duration: give seconds and nanos of the same sign, under 292 years");
        }
    }

    /** A timeout, which must be positive when given. */
    public static Optional<Duration> timeout(boolean present, Duration value) {
        if (!present) {
            return Optional.empty();
        }
        if (value.isNegative() || value.isZero()) {
            throw ComputeException.invalid("timeout must be positive when set; omit it for no timeout");
        }
        return Optional.of(value);
    }
}
