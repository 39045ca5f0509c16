package ai.chalk.compute.server.session;

import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.OutputData;
import ai.chalk.compute.proto.sandbox.v2.ProcessExited;
import ai.chalk.compute.proto.sandbox.v2.ProcessFailed;
import ai.chalk.compute.proto.sandbox.v2.ProcessState;
import ai.chalk.compute.proto.sandbox.v2.ProcessStatus;
import ai.chalk.compute.proto.sandbox.v2.ProcessTimedOut;
import ai.chalk.compute.proto.sandbox.v2.SessionInfo;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.exec.OutputStreamKind;
import ai.chalk.compute.server.exec.ProcessRun;
import ai.chalk.compute.server.exec.RunResult;
import com.google.protobuf.ByteString;

/**
 * A process started through {@code OpenSession}. It runs whether or not a client is attached;
 * its output goes to the session's {@link SessionLog} so it can be replayed.
 */
public final class Session {

    private final String id;
    private final NewProcess request;
    private final SessionLog log;
    private volatile ProcessRun run;
    private volatile ProcessStatus status = ProcessStatus.newBuilder()
            .setState(ProcessState.PROCESS_STATE_RUNNING)
            .build();
    private final EnvironmentBytes.Account budget;
    private long reserved; // guarded by this: what this session holds of the server's session output budget

    /** A session whose buffer of {@code capacityBytes} was reserved from {@code budget}. */
    Session(String id, NewProcess request, long capacityBytes, EnvironmentBytes.Account budget) {
        this.id = id;
        this.request = request;
        this.log = new SessionLog(capacityBytes);
        this.budget = budget;
        this.reserved = capacityBytes;
    }

    /** A finished session buffers no more: it keeps reserved only what its log holds. */
    synchronized void shrinkReservation() {
        long holds = Math.min(reserved, log.bufferedBytes());
        budget.release(reserved - holds);
        reserved = holds;
    }

    /** The session is forgotten: its whole reservation goes back. */
    synchronized void releaseReservation() {
        budget.release(reserved);
        reserved = 0;
    }

    public String id() {
        return id;
    }

    public SessionLog log() {
        return log;
    }

    /** The running process; set once right after it started. */
    public ProcessRun run() {
        return run;
    }

    void started(ProcessRun run) {
        this.run = run;
        run.done().whenComplete((result, failure) -> {
            if (failure != null) {
                failed("the process could not be followed: " + failure.getMessage());
            } else {
                exited(result);
            }
        });
    }

    /** Records a chunk of output. */
    void output(OutputStreamKind kind, byte[] data) {
        OutputData.Stream stream = switch (kind) {
            case STDOUT -> OutputData.Stream.STREAM_STDOUT;
            case STDERR -> OutputData.Stream.STREAM_STDERR;
            case PTY -> OutputData.Stream.STREAM_PTY_OUTPUT;
        };
        log.append(
                OpenSessionResponse.newBuilder()
                        .setOutputData(OutputData.newBuilder().setStream(stream).setData(ByteString.copyFrom(data)))
                        .build(),
                false);
    }

    private void exited(RunResult result) {
        ProcessStatus.Builder s = ProcessStatus.newBuilder()
                .setState(result.timedOut() ? ProcessState.PROCESS_STATE_TIMED_OUT : ProcessState.PROCESS_STATE_EXITED);
        result.status().exitCode().ifPresent(s::setExitCode);
        result.status().signal().ifPresent(s::setSignal);
        status = s.build();
        OpenSessionResponse.Builder event = OpenSessionResponse.newBuilder();
        if (result.timedOut()) {
            ProcessTimedOut.Builder t = ProcessTimedOut.newBuilder();
            result.status().exitCode().ifPresent(t::setExitCode);
            result.status().signal().ifPresent(t::setSignal);
            event.setProcessTimedOut(t);
        } else {
            ProcessExited.Builder e = ProcessExited.newBuilder();
            result.status().exitCode().ifPresent(e::setExitCode);
            result.status().signal().ifPresent(e::setSignal);
            event.setProcessExited(e);
        }
        log.append(event.build(), true);
    }

    void failed(String message) {
        status = ProcessStatus.newBuilder()
                .setState(ProcessState.PROCESS_STATE_FAILED)
                .build();
        log.append(
                OpenSessionResponse.newBuilder()
                        .setProcessFailed(ProcessFailed.newBuilder().setMessage(message))
                        .build(),
                true);
    }

    /** The process's current status. */
    public ProcessStatus status() {
        return status;
    }

    /** The session as the wire shows it. */
    public SessionInfo info() {
        return SessionInfo.newBuilder()
                .setSessionId(id)
                .setNewProcess(request)
                .setProcessStatus(status)
                .build();
    }

    /** Kills the session's process tree if it still runs. */
    void kill() {
        ProcessRun r = run;
        if (r != null && r.running()) {
            r.kill();
        }
    }
}
