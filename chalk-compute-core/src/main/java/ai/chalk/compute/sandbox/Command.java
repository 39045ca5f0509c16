package ai.chalk.compute.sandbox;

import ai.chalk.compute.proto.sandbox.v1.ExecInit;
import ai.chalk.compute.proto.sandbox.v1.PtyInfo;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A command to run in a sandbox, with its options: working directory, environment, timeout,
 * terminal, and how much output exec collects. Immutable; each method returns a new command.
 *
 * <pre>{@code
 * ExecResult result = sandbox.exec(Command.of("python", "train.py")
 *         .workdir("/app")
 *         .env("CUDA_VISIBLE_DEVICES", "0")
 *         .timeout(Duration.ofHours(1)));
 * }</pre>
 */
public final class Command {

    private final String command;
    private final List<String> args;
    private final String workdir;
    private final Map<String, String> env;
    private final Duration timeout;
    private final Pty pty;
    private final long outputLimit;

    /**
     * The most output {@link Sandbox#exec(Command)} collects in memory unless the command says otherwise
     * ({@link #outputLimit(long)}): 32 MiB of stdout and stderr together.
     */
    public static final long DEFAULT_OUTPUT_LIMIT = 32L * 1024 * 1024;

    private Command(
            String command,
            List<String> args,
            String workdir,
            Map<String, String> env,
            Duration timeout,
            Pty pty,
            long outputLimit) {
        this.command = command;
        this.args = args;
        this.workdir = workdir;
        this.env = env;
        this.timeout = timeout;
        this.pty = pty;
        this.outputLimit = outputLimit;
    }

    /**
     * A program and its arguments, run directly (not through a shell).
     *
     * @param command the program, found on the sandbox's {@code PATH} unless it is a path
     * @param args    its arguments
     * @return the command with default options
     */
    public static Command of(String command, String... args) {
        return of(command, Arrays.asList(args));
    }

    /**
     * A program and its arguments, run directly (not through a shell).
     *
     * @param command the program
     * @param args    its arguments
     * @return the command with default options
     */
    public static Command of(String command, List<String> args) {
        Objects.requireNonNull(command, "command");
        for (String a : args) {
            Objects.requireNonNull(a, "args must not contain null");
        }
        return new Command(command, List.copyOf(args), null, Map.of(), null, null, DEFAULT_OUTPUT_LIMIT);
    }

    /**
     * A shell script run with {@code sh -c}, for pipes, redirections and {@code &&}.
     *
     * @param script the script
     * @return the command with default options
     */
    public static Command shell(String script) {
        return of("sh", "-c", Objects.requireNonNull(script, "script"));
    }

    /**
     * This command run in the given working directory instead of the sandbox's default.
     *
     * @param workdir a directory inside the sandbox
     * @return a new command
     */
    public Command workdir(String workdir) {
        return new Command(command, args, Objects.requireNonNull(workdir, "workdir"), env, timeout, pty, outputLimit);
    }

    /**
     * This command with an environment variable added (or replaced), on top of the sandbox's.
     *
     * @param name  the variable's name
     * @param value its value
     * @return a new command
     */
    public Command env(String name, String value) {
        return env(Map.of(name, value));
    }

    /**
     * This command with environment variables added (or replaced), on top of the sandbox's.
     *
     * @param variables names and values
     * @return a new command
     */
    public Command env(Map<String, String> variables) {
        LinkedHashMap<String, String> merged = new LinkedHashMap<>(env);
        variables.forEach((k, v) -> merged.put(
                Objects.requireNonNull(k, "variable name"), Objects.requireNonNull(v, () -> "value of " + k)));
        return new Command(command, args, workdir, Collections.unmodifiableMap(merged), timeout, pty, outputLimit);
    }

    /**
     * This command killed, with everything it started, when it runs longer than the timeout.
     * The server counts whole seconds, so the timeout is rounded up to the next second.
     *
     * @param timeout a positive duration
     * @return a new command
     */
    public Command timeout(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        return new Command(command, args, workdir, env, timeout, pty, outputLimit);
    }

    /**
     * This command with a different bound on the output that {@link Sandbox#exec(Command)}, {@link ExecStream#collect()}
     * and {@link ExecProcess#waitFor()} collect in memory: stdout and stderr together, {@value #DEFAULT_OUTPUT_LIMIT}
     * bytes (32 MiB) unless set. A command that prints more is killed and those calls throw
     * {@link ExecOutputLimitException}; to read output of any size, consume it as it comes with
     * {@link Sandbox#execStream(Command)}, which holds only a few messages in memory at a time.
     *
     * @param bytes the most bytes to collect, at least 1; {@link Long#MAX_VALUE} collects without a bound (as much
     *              as the JVM's heap holds)
     * @return a new command
     */
    public Command outputLimit(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("outputLimit must be at least 1 byte, got " + bytes);
        }
        return new Command(command, args, workdir, env, timeout, pty, bytes);
    }

    /**
     * This command run on a pseudo-terminal of the given size, for programs that need a terminal
     * (shells, editors, coloured output). Its output then arrives as {@link ExecEvent.PtyOutput}.
     *
     * @param cols terminal width in characters
     * @param rows terminal height in lines
     * @return a new command
     */
    public Command pty(int cols, int rows) {
        return new Command(command, args, workdir, env, timeout, new Pty(cols, rows), outputLimit);
    }

    /** The program to run. */
    public String command() {
        return command;
    }

    /** Its arguments. */
    public List<String> args() {
        return args;
    }

    /** The working directory, if set. */
    public Optional<String> workdir() {
        return Optional.ofNullable(workdir);
    }

    /** The environment variables added for this command. */
    public Map<String, String> env() {
        return env;
    }

    /** The timeout, if set. */
    public Optional<Duration> timeout() {
        return Optional.ofNullable(timeout);
    }

    /** The terminal size, if the command runs on a PTY. */
    public Optional<Pty> pty() {
        return Optional.ofNullable(pty);
    }

    /** The most output, in bytes, that exec collects in memory for this command (see {@link #outputLimit(long)}). */
    public long outputLimit() {
        return outputLimit;
    }

    /** The timeout in whole seconds as sent to the server, rounded up; empty when none is set. */
    Optional<Long> timeoutSeconds() {
        if (timeout == null) {
            return Optional.empty();
        }
        return Optional.of(timeout.getSeconds() + (timeout.getNano() > 0 ? 1 : 0));
    }

    ExecInit toInit(String sandboxId) {
        ExecInit.Builder init = ExecInit.newBuilder()
                .setSandboxId(sandboxId)
                .setCommand(command)
                .addAllArgs(args)
                .putAllEnv(env);
        if (workdir != null) {
            init.setWorkdir(workdir);
        }
        timeoutSeconds().ifPresent(init::setTimeoutSecs);
        if (pty != null) {
            init.setPtyInfo(PtyInfo.newBuilder().setCols(pty.cols()).setRows(pty.rows()));
        }
        return init.build();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Command other
                && command.equals(other.command)
                && args.equals(other.args)
                && Objects.equals(workdir, other.workdir)
                && env.equals(other.env)
                && Objects.equals(timeout, other.timeout)
                && Objects.equals(pty, other.pty)
                && outputLimit == other.outputLimit;
    }

    @Override
    public int hashCode() {
        return Objects.hash(command, args, workdir, env, timeout, pty, outputLimit);
    }

    /** The command line, for logs; environment values are not shown. */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder(command);
        args.forEach(a -> s.append(' ').append(a));
        return s.toString();
    }

    /**
     * The size of a pseudo-terminal.
     *
     * @param cols width in characters, at least 1
     * @param rows height in lines, at least 1
     */
    public record Pty(int cols, int rows) {
        /** Validates the size. */
        public Pty {
            if (cols < 1 || rows < 1) {
                throw new IllegalArgumentException("terminal size must be at least 1x1, got " + cols + "x" + rows);
            }
        }
    }
}
