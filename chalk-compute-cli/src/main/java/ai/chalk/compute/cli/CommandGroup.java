package ai.chalk.compute.cli;

import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/** A command that only groups subcommands ({@code sandbox}, {@code function}, ...): run alone, it names them. */
abstract class CommandGroup implements Runnable {

    private final String choices;

    @CommandLine.Spec
    @Nullable
    CommandSpec spec;

    /** {@code choices}: the subcommands as the error lists them, such as {@code "create, list or terminate"}. */
    CommandGroup(String choices) {
        this.choices = choices;
    }

    @Override
    public final void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "name what to do: " + choices);
    }
}
