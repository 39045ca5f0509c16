package ai.chalk.compute.cli;

import ai.chalk.compute.sandbox.SandboxClient;
import java.io.PrintWriter;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * What a subcommand that talks to the server needs, mixed in with {@code @Mixin}: a client from the command line's
 * connection and the command's output and error streams (the ones a test captures).
 */
@CommandLine.Command // picocli takes a mixin only with an annotation of its own; this one adds no attributes
final class CommandContext {

    // the command this is mixed into: its streams, and its root for the connection
    @CommandLine.Spec(CommandLine.Spec.Target.MIXEE)
    @Nullable
    CommandSpec mixee;

    /** A new client for one command; the caller closes it. */
    SandboxClient connect() {
        return ((ChalkComputeCli) mixee.root().userObject()).connect();
    }

    CommandLine commandLine() {
        return mixee.commandLine();
    }

    PrintWriter out() {
        return mixee.commandLine().getOut();
    }

    PrintWriter err() {
        return mixee.commandLine().getErr();
    }
}
