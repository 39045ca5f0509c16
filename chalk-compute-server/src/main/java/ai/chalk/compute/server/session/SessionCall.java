package ai.chalk.compute.server.session;

import ai.chalk.compute.proto.sandbox.v2.AttachSession;
import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.SessionAttached;
import ai.chalk.compute.proto.sandbox.v2.SessionDetached;
import ai.chalk.compute.proto.sandbox.v2.SessionError;
import ai.chalk.compute.server.exec.MemoryBudgets;
import ai.chalk.compute.server.exec.ProcessRequests;
import ai.chalk.compute.server.exec.ProcessRun;
import ai.chalk.compute.server.exec.ProcessThreads;
import ai.chalk.compute.server.exec.Signals;
import ai.chalk.compute.server.exec.StdinFlow;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.sandbox.LiveSandbox;
import ai.chalk.compute.server.sandbox.SandboxManager;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.Optional;

/**
 * One {@code OpenSession} stream. It starts a new process or attaches to an existing session,
 * forwards stdin, signals and resizes, and sends the session's events from where the client
 * left off, only as fast as the client reads. Detaching or disconnecting leaves the process
 * running; the stream ends after the process's terminal event.
 */
final class SessionCall implements StreamObserver<OpenSessionRequest> {

    private final SandboxManager sandboxes;
    private final String environment;
    private final ProcessThreads threads;
    private final ServerCallStreamObserver<OpenSessionResponse> call;
    private final long capacityBytes;
    private final MemoryBudgets budgets;
    private final Runnable drainer = this::drain;
    private Session session;
    private long cursor;
    private boolean closed;
    private boolean nextWhenReady; // a status waits to be read before the next request is taken

    /** @param environment the caller's: sessions open only in that environment's sandboxes */
    SessionCall(
            SandboxManager sandboxes,
            String environment,
            ProcessThreads threads,
            ServerCallStreamObserver<OpenSessionResponse> call,
            long capacityBytes,
            MemoryBudgets budgets) {
        this.sandboxes = sandboxes;
        this.environment = environment;
        this.budgets = budgets;
        this.threads = threads;
        this.call = call;
        this.capacityBytes = capacityBytes;
        call.setOnReadyHandler(this::ready);
        call.setOnCancelHandler(this::detachQuietly);
        call.disableAutoRequest(); // one message at a time, so queued stdin stays bounded (see StdinFlow)
        call.request(1);
    }

    @Override
    public void onNext(OpenSessionRequest request) {
        try {
            switch (request.getCommandCase()) {
                case NEW_PROCESS -> startProcess(request.getNewProcess());
                case ATTACH_SESSION -> attach(request.getAttachSession());
                case DETACH_SESSION -> detach();
                case STDIN_DATA -> {
                    StdinFlow.write(
                            requireRun("stdin_data"),
                            request.getStdinData().getData().toByteArray(),
                            call,
                            budgets.stdin().of(environment));
                    return;
                }
                case STDIN_EOF -> requireRun("stdin_eof").closeStdin();
                case SIGNAL ->
                    requireRun("signal")
                            .signal(Signals.check(request.getSignal().getSignal()));
                case RESIZE_PTY ->
                    requireRun("resize_pty").resize((int) request.getResizePty().getCols(), (int)
                            request.getResizePty().getRows());
                case GET_PROCESS_STATUS -> {
                    send(OpenSessionResponse.newBuilder()
                            .setProcessStatus(
                                    requireSession("get_process_status").status())
                            .setSeq(requireSession("get_process_status").log().lastSeq())
                            .build());
                    requestWhenReady();
                    return;
                }
                case COMMAND_NOT_SET ->
                    throw Status.INVALID_ARGUMENT
                            .withDescription("empty OpenSessionRequest: set new_process or attach_session first")
                            .asRuntimeException();
            }
            call.request(1);
        } catch (RuntimeException e) {
            error(StatusErrors.toStatus(e));
        }
    }

    private synchronized Session requireSession(String what) {
        if (session == null) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(what + " sent before new_process or attach_session")
                    .asRuntimeException();
        }
        return session;
    }

    private ProcessRun requireRun(String what) {
        ProcessRun run = requireSession(what).run();
        if (run == null) {
            throw Status.FAILED_PRECONDITION
                    .withDescription("the session's process is not running")
                    .asRuntimeException();
        }
        return run;
    }

    private void startProcess(NewProcess np) {
        synchronized (this) {
            if (session != null) {
                throw Status.FAILED_PRECONDITION
                        .withDescription("this stream already has session " + session.id()
                                + "; open another stream for another process")
                        .asRuntimeException();
            }
        }
        Optional<ProcessSpec.TerminalSize> pty = np.hasPtyInfo()
                ? Optional.of(ProcessRequests.terminal(
                        (int) np.getPtyInfo().getCols(), (int) np.getPtyInfo().getRows()))
                : Optional.empty();
        ProcessSpec spec = ProcessRequests.spec(
                np.getCommand(),
                np.getArgsList(),
                np.hasWorkdir() ? Optional.of(np.getWorkdir()) : Optional.empty(),
                np.getEnvVarsMap(),
                pty);
        Optional<Duration> timeout = ProcessRequests.timeout(np.hasTimeout(), np.getTimeout());
        LiveSandbox sandbox = sandboxes.requireRunning(environment, np.getSandboxId());
        Session s = SessionRegistry.of(sandbox)
                .create(np, capacityBytes, budgets.sessionOutput().of(environment));
        try {
            s.started(ProcessRun.start(sandbox.runtime(), environment, spec, timeout, threads, s::output));
        } catch (ProcessStartException e) {
            SessionRegistry.of(sandbox).remove(s.id());
            throw Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException();
        } catch (RuntimeException e) {
            SessionRegistry.of(sandbox).remove(s.id()); // too many commands running: the session never began
            throw e;
        }
        follow(s, 0);
    }

    private void attach(AttachSession a) {
        synchronized (this) {
            if (session != null) {
                throw Status.FAILED_PRECONDITION
                        .withDescription(
                                "this stream is already attached to session " + session.id() + "; detach first")
                        .asRuntimeException();
            }
        }
        LiveSandbox sandbox = sandboxes.requireLive(environment, a.getSandboxId());
        Session s = SessionRegistry.of(sandbox).require(a.getSandboxId(), a.getSessionId());
        if (a.hasPtyInfo() && s.run() != null) {
            s.run().resize((int) a.getPtyInfo().getCols(), (int) a.getPtyInfo().getRows());
        }
        follow(s, a.hasAfterSeq() ? a.getAfterSeq() : 0);
    }

    private void follow(Session s, long afterSeq) {
        synchronized (this) {
            session = s;
            cursor = afterSeq;
            send(OpenSessionResponse.newBuilder()
                    .setSessionAttached(SessionAttached.newBuilder().setSessionId(s.id()))
                    .setSeq(Math.min(afterSeq, s.log().lastSeq()))
                    .build());
        }
        s.log().addListener(drainer);
        drain();
    }

    /**
     * Asks for the client's next message once the stream can take another answer: a client asking for its process's
     * status in a loop, reading none of the answers, made the server queue them without end.
     */
    private synchronized void requestWhenReady() {
        if (call.isReady()) {
            call.request(1);
        } else {
            nextWhenReady = true;
        }
    }

    private void ready() {
        synchronized (this) {
            if (nextWhenReady) {
                nextWhenReady = false;
                call.request(1);
            }
        }
        drain();
    }

    /** Sends what the client has not seen yet, while it can take it. */
    private synchronized void drain() {
        Session s = session;
        if (s == null || closed) {
            return;
        }
        while (!closed && call.isReady()) {
            SessionLog.Next next = s.log().next(cursor);
            if (next == null) {
                return;
            }
            if (next instanceof SessionLog.Gap gap) {
                send(OpenSessionResponse.newBuilder()
                        .setSeq(gap.lastSeq())
                        .setError(SessionError.newBuilder()
                                .setCode("OUTPUT_DROPPED")
                                .setMessage(
                                        "events " + gap.firstSeq() + ".." + gap.lastSeq() + " were dropped before this"
                                                + " client read them: the session buffers at most " + capacityBytes
                                                + " bytes of output (" + gap.bytes() + " bytes dropped so far)"))
                        .build());
                cursor = gap.lastSeq();
            } else if (next instanceof SessionLog.Event event) {
                OpenSessionResponse e = event.entry().event();
                send(e);
                cursor = event.entry().seq();
                if (e.hasProcessExited() || e.hasProcessFailed() || e.hasProcessTimedOut()) {
                    finish();
                    return;
                }
            }
        }
    }

    private synchronized void detach() {
        Session s = requireSession("detach_session");
        s.log().removeListener(drainer);
        send(OpenSessionResponse.newBuilder()
                .setSessionDetached(SessionDetached.getDefaultInstance())
                .setSeq(cursor)
                .build());
        finish();
    }

    private synchronized void detachQuietly() {
        closed = true;
        if (session != null) {
            session.log().removeListener(drainer);
        }
    }

    private synchronized void send(OpenSessionResponse response) {
        if (!closed && !call.isCancelled()) {
            call.onNext(response);
        }
    }

    private synchronized void finish() {
        if (closed) {
            return;
        }
        closed = true;
        if (session != null) {
            session.log().removeListener(drainer);
        }
        if (!call.isCancelled()) {
            call.onCompleted();
        }
    }

    /** A request error: reported as a SessionError event, and the stream ends with the same status. */
    private synchronized void error(Status status) {
        if (closed) {
            return;
        }
        send(OpenSessionResponse.newBuilder()
                .setError(SessionError.newBuilder()
                        .setCode(status.getCode().name())
                        .setMessage(
                                status.getDescription() == null
                                        ? status.getCode().name()
                                        : status.getDescription()))
                .build());
        closed = true;
        if (session != null) {
            session.log().removeListener(drainer);
        }
        if (!call.isCancelled()) {
            call.onError(status.asRuntimeException());
        }
    }

    @Override
    public void onError(Throwable t) {
        detachQuietly();
    }

    @Override
    public void onCompleted() {
        // the client will send nothing more; the session goes on and this stream keeps delivering
    }
}
