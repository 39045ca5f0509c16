package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.ExecResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Shell commands in a {@link CodeSandbox}, as code_sandboxes' {@code sandbox.commands}: {@link #run(String)} waits
 * for a command line, {@link #exec(String, String...)} streams a program's output as it comes. Where they run is the
 * variant's: the sandbox's own exec ({@code chalk}), the container ({@code docker}), this machine in the working
 * directory ({@code eval}), or the Jupyter server's machine through a kernel ({@code jupyter}).
 */
public final class CodeCommands {

    /** How one variant runs commands. */
    interface Runner {
        ExecResult run(String commandLine);

        CodeProcess exec(List<String> argv);
    }

    private final Runner runner;

    CodeCommands(Runner runner) {
        this.runner = runner;
    }

    /** Runs a shell command line ({@code sh -c}) and waits for it; a non-zero exit is a result, not an exception. */
    public ExecResult run(String commandLine) {
        Objects.requireNonNull(commandLine, "commandLine");
        return runner.run(commandLine);
    }

    /** Starts a program and streams its output; iterate it, or {@code lines()} for stdout line by line. */
    public CodeProcess exec(String program, String... args) {
        Objects.requireNonNull(program, "program");
        List<String> argv = new ArrayList<>();
        argv.add(program);
        argv.addAll(List.of(args));
        return runner.exec(argv);
    }
}
