package ai.chalk.compute.sandbox;

import ai.chalk.compute.proto.sandbox.v2.ProcessState;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * A session of a sandbox as {@link Sandbox#sessions()} lists it: re-attach to it with
 * {@link Session#attach(SandboxClient, String, String, long)}.
 *
 * @param id       the session's id
 * @param command  the program it runs
 * @param args     its arguments
 * @param running  whether its process was still running
 * @param exitCode its exit code, once it has exited normally
 */
public record SessionInfo(String id, String command, List<String> args, boolean running, OptionalInt exitCode) {

    /** Validates the fields. */
    public SessionInfo {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(command, "command");
        args = List.copyOf(args);
        Objects.requireNonNull(exitCode, "exitCode");
    }

    static SessionInfo fromProto(ai.chalk.compute.proto.sandbox.v2.SessionInfo p) {
        var status = p.getProcessStatus();
        return new SessionInfo(
                p.getSessionId(),
                p.getNewProcess().getCommand(),
                p.getNewProcess().getArgsList(),
                status.getState() == ProcessState.PROCESS_STATE_RUNNING,
                status.hasExitCode() ? OptionalInt.of(status.getExitCode()) : OptionalInt.empty());
    }
}
