package ai.chalk.compute.sandbox;

import ai.chalk.compute.sandbox.spi.CommandLine;
import ai.chalk.compute.sandbox.spi.ExecTarget;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.function.Consumer;

/**
 * A sandbox as the helpers built on exec see it ({@code files()}, {@code git()}): their commands become this
 * sandbox's exec calls, in its workdir, with its timeouts thrown as {@link ExecTimeoutException}.
 */
final class SandboxExecTarget implements ExecTarget {

    private final Sandbox sandbox;

    SandboxExecTarget(Sandbox sandbox) {
        this.sandbox = Objects.requireNonNull(sandbox, "sandbox");
    }

    @Override
    public ExecResult run(CommandLine command) {
        return sandbox.exec(toCommand(command));
    }

    @Override
    public ExecProcess start(CommandLine command) {
        return sandbox.execStart(toCommand(command));
    }

    @Override
    public OptionalInt stream(CommandLine command, Consumer<byte[]> stdout, Consumer<byte[]> stderr) {
        OptionalInt status = OptionalInt.empty();
        try (ExecStream events = sandbox.execStream(toCommand(command))) {
            for (ExecEvent event : events) {
                if (event instanceof ExecEvent.Stdout out) {
                    stdout.accept(out.data());
                } else if (event instanceof ExecEvent.Stderr err) {
                    stderr.accept(err.data());
                } else if (event instanceof ExecEvent.Exited exited) {
                    status = OptionalInt.of(exited.status());
                }
            }
        }
        return status;
    }

    private static Command toCommand(CommandLine line) {
        Command command = Command.of(line.program(), line.args()).env(line.env());
        return line.timeout() == null ? command : command.timeout(line.timeout());
    }

    /** The sandbox's own description, as the helpers' {@code toString} shows it. */
    @Override
    public String toString() {
        return sandbox.toString();
    }
}
