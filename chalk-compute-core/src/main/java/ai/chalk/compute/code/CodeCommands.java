package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.Sandbox;

/**
 * Shell commands in a {@link CodeSandbox}, as code_sandboxes' {@code sandbox.commands}: {@link #run(String)} waits
 * for a command line, {@link #exec(String, String...)} streams a program's output as it comes. Both are the
 * sandbox's own {@code exec} ({@link Sandbox#exec(Command)}, {@link Sandbox#execStream(Command)}).
 */
public final class CodeCommands {

    private final Sandbox sandbox;

    CodeCommands(Sandbox sandbox) {
        this.sandbox = sandbox;
    }

    /** Runs a shell command line ({@code sh -c}) and waits for it; a non-zero exit is a result, not an exception. */
    public ExecResult run(String commandLine) {
        return sandbox.exec(Command.shell(commandLine));
    }

    /** Starts a program and streams its output; iterate it, or {@code lines()} for stdout line by line. */
    public ExecStream exec(String program, String... args) {
        return sandbox.execStream(program, args);
    }
}
