package ai.chalk.compute.files;

import ai.chalk.compute.sandbox.spi.CommandLine;
import ai.chalk.compute.sandbox.spi.CommandOutcome;
import ai.chalk.compute.sandbox.spi.ExecTarget;
import ai.chalk.compute.sandbox.spi.RunningCommand;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.function.Consumer;

/**
 * Runs the files API's shell scripts in a sandbox: paths go to {@code sh} as arguments ({@code $1}, {@code $2}...),
 * never into the script's text, and every command gets the same options (English messages, which
 * {@link FileFailures} classifies, and the time limit).
 */
final class FileCommands {

    private final ExecTarget sandbox;
    private final Duration timeout; // null: none

    FileCommands(ExecTarget sandbox, Duration timeout) {
        this.sandbox = Objects.requireNonNull(sandbox, "sandbox");
        this.timeout = timeout;
    }

    /** {@code sh -c script sh args...}: the arguments are the script's {@code $1}, {@code $2}... */
    static CommandLine shell(String script, String... args) {
        List<String> argv = new ArrayList<>(args.length + 3);
        argv.add("-c");
        argv.add(script);
        argv.add("sh");
        argv.addAll(Arrays.asList(args));
        return CommandLine.of("sh", argv);
    }

    /** Runs a command and turns a failure into the matching exception. */
    CommandOutcome run(String operation, String path, CommandLine command) {
        CommandOutcome result = exec(command);
        if (!result.success()) {
            throw FileFailures.failure(operation, path, result.exitCode(), result.stderrText());
        }
        return result;
    }

    /** Runs a command and returns its result whatever its exit code. */
    CommandOutcome exec(CommandLine command) {
        return sandbox.run(withOptions(command));
    }

    /** Starts a command whose standard input the caller writes. */
    RunningCommand start(CommandLine command) {
        return sandbox.start(withOptions(command));
    }

    /** Runs a command whose output the caller takes as it comes; returns its exit status, if it reported one. */
    OptionalInt stream(CommandLine command, Consumer<byte[]> stdout, Consumer<byte[]> stderr) {
        return sandbox.stream(withOptions(command), stdout, stderr);
    }

    private CommandLine withOptions(CommandLine command) {
        return command.withEnv(Map.of("LC_ALL", "C")).withTimeout(timeout);
    }
}
