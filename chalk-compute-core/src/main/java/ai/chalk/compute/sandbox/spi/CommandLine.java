package ai.chalk.compute.sandbox.spi;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A command a helper runs: a program and its arguments (never through a shell unless the program is one), extra
 * environment variables, and a time limit.
 *
 * @param program the program, such as {@code sh} or {@code git}
 * @param args    its arguments
 * @param env     variables added to the sandbox's environment
 * @param timeout the time limit, or {@code null} for none
 */
public record CommandLine(
        String program,
        List<String> args,
        Map<String, String> env,
        @Nullable Duration timeout) {

    /** Copies the collections; checks for nulls. */
    public CommandLine {
        Objects.requireNonNull(program, "program");
        args = List.copyOf(args);
        env = Map.copyOf(env);
    }

    /** Names the environment's variables without their values, which may be secrets. */
    @Override
    public String toString() {
        return "CommandLine[program=" + program + ", args=" + args + ", env=" + env.keySet() + ", timeout=" + timeout
                + "]";
    }

    /**
     * A command without extra environment or time limit.
     *
     * @param program the program
     * @param args    its arguments
     * @return the command
     */
    public static CommandLine of(String program, List<String> args) {
        return new CommandLine(program, args, Map.of(), null);
    }

    /**
     * This command with more environment variables, replacing those of the same names.
     *
     * @param variables names to values
     * @return a new command
     */
    public CommandLine withEnv(Map<String, String> variables) {
        Map<String, String> merged = new java.util.LinkedHashMap<>(env);
        merged.putAll(variables);
        return new CommandLine(program, args, merged, timeout);
    }

    /**
     * This command with a time limit.
     *
     * @param limit the limit, or {@code null} for none
     * @return a new command
     */
    public CommandLine withTimeout(@Nullable Duration limit) {
        return new CommandLine(program, args, env, limit);
    }
}
