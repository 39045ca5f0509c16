package ai.chalk.compute.files;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecProcess;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.Sandbox;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Runs the files API's shell scripts in a sandbox: paths go to {@code sh} as arguments ({@code $1}, {@code $2}...),
 * never into the script's text, and every command gets the same options (English messages, which
 * {@link FileFailures} classifies, and the time limit).
 */
final class FileCommands {

    private final Sandbox sandbox;
    private final Duration timeout; // null: none

    FileCommands(Sandbox sandbox, Duration timeout) {
        this.sandbox = Objects.requireNonNull(sandbox, "sandbox");
        this.timeout = timeout;
    }

    /** {@code sh -c script sh args...}: the arguments are the script's {@code $1}, {@code $2}... */
    static Command shell(String script, String... args) {
        List<String> argv = new ArrayList<>(args.length + 3);
        argv.add("-c");
        argv.add(script);
        argv.add("sh");
        argv.addAll(Arrays.asList(args));
        return Command.of("sh", argv);
    }

    /** Runs a command and turns a failure into the matching exception. */
    ExecResult run(String operation, String path, Command command) {
        ExecResult result = exec(command);
        if (!result.success()) {
            throw FileFailures.failure(operation, path, result.exitCode(), result.stderrText());
        }
        return result;
    }

    /** Runs a command and returns its result whatever its exit code. */
    ExecResult exec(Command command) {
        return sandbox.exec(withOptions(command));
    }

    /** Starts a command whose standard input the caller writes. */
    ExecProcess start(Command command) {
        return sandbox.execStart(withOptions(command));
    }

    /** Starts a command whose output the caller reads as it comes. */
    ExecStream stream(Command command) {
        return sandbox.execStream(withOptions(command));
    }

    private Command withOptions(Command command) {
        Command c = command.env("LC_ALL", "C");
        return timeout == null ? c : c.timeout(timeout);
    }
}
