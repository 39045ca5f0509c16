package ai.chalk.compute.server.runtime;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One process to start in a sandbox.
 *
 * @param command the program (searched on the sandbox's PATH when not absolute)
 * @param args    its arguments
 * @param workdir working directory inside the sandbox; empty for the sandbox's default
 * @param env     environment added to the sandbox's own
 * @param pty     a terminal size when the process should run on a PTY; empty for pipes
 */
public record ProcessSpec(
        String command,
        List<String> args,
        Optional<String> workdir,
        Map<String, String> env,
        Optional<TerminalSize> pty) {

    public ProcessSpec {
        args = List.copyOf(args);
        env = Map.copyOf(env);
    }

    /** Names the environment's variables without their values, which may be secrets. */
    @Override
    public String toString() {
        return "ProcessSpec[command=" + command + ", args=" + args + ", workdir=" + workdir + ", env=" + env.keySet()
                + ", pty=" + pty + "]";
    }

    /** A terminal size in character cells. */
    public record TerminalSize(int cols, int rows) {}
}
