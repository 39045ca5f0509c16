package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.Sandbox;
import java.util.List;

/** The {@code chalk} variant's commands: the sandbox's own exec, pulled from the server as they are read. */
final class SandboxCodeCommands implements CodeCommands.Runner {

    private final Sandbox sandbox;

    SandboxCodeCommands(Sandbox sandbox) {
        this.sandbox = sandbox;
    }

    @Override
    public ExecResult run(String commandLine) {
        return sandbox.exec(Command.shell(commandLine));
    }

    @Override
    public CodeProcess exec(List<String> argv) {
        ExecStream stream = sandbox.execStream(Command.of(argv.get(0), argv.subList(1, argv.size())));
        return new CodeProcess(stream.iterator(), stream::close);
    }
}
