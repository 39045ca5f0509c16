package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.proto.sandbox.v1.ExecError;
import ai.chalk.compute.proto.sandbox.v1.ExecInit;
import ai.chalk.compute.proto.sandbox.v1.ExecRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.OutputData;
import ai.chalk.compute.proto.sandbox.v1.ProcessExited;
import ai.chalk.compute.proto.sandbox.v1.ProcessStarted;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.exec.OutputStreamKind;
import ai.chalk.compute.server.exec.ProcessRequests;
import ai.chalk.compute.server.exec.ProcessRun;
import ai.chalk.compute.server.exec.ProcessThreads;
import ai.chalk.compute.server.exec.RunResult;
import ai.chalk.compute.server.exec.Signals;
import ai.chalk.compute.server.exec.StdinFlow;
import ai.chalk.compute.server.grpc.ReadyGate;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessStartException;
import com.google.protobuf.UnsafeByteOperations;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@code SandboxService.Exec} call: the client's init starts a process; stdin, EOF, signals
 * and resizes follow; the server answers started(pid), output as it comes, and exited. Output
 * is sent only as fast as the client reads it. A client that goes away kills the process tree.
 * A timeout kills the process tree and is reported as the exit (signal 9) followed by an error
 * with code {@code DEADLINE_EXCEEDED}.
 */
public final class ExecCall implements StreamObserver<ExecRequest> {

    private static final Logger log = LoggerFactory.getLogger(ExecCall.class);
    /** Bytes of output a call lets wait in its transport before the pump waits for the client. */
    static final int OUTPUT_IN_FLIGHT = 1 << 20;

    private final SandboxManager sandboxes;
    private final String environment;
    private final ProcessThreads threads;
    private final ServerCallStreamObserver<ExecResponse> call;
    private final ReadyGate gate;
    private final EnvironmentBytes.Account stdinBudget;
    private final CountDownLatch startedSent = new CountDownLatch(1);
    private volatile ProcessRun run;
    private boolean closed;

    /** @param environment the caller's: the call runs only in that environment's sandboxes */
    public ExecCall(
            SandboxManager sandboxes,
            String environment,
            ProcessThreads threads,
            ServerCallStreamObserver<ExecResponse> call,
            EnvironmentBytes stdinBudget) {
        this.sandboxes = sandboxes;
        this.environment = environment;
        this.stdinBudget = stdinBudget.of(environment);
        this.threads = threads;
        this.call = call;
        this.gate = new ReadyGate(call);
        // a few output chunks may wait in the transport (gRPC's default is 32 KiB, less than one chunk): the pump
        // then reads on while earlier chunks are written, and what one call holds stays bounded by this much
        call.setOnReadyThreshold(OUTPUT_IN_FLIGHT);
        call.setOnReadyHandler(gate);
        call.setOnCancelHandler(this::cancelled);
        // messages are asked for one at a time, so queued stdin is bounded (see StdinFlow)
        call.disableAutoRequest();
        call.request(1);
    }

    @Override
    public void onNext(ExecRequest request) {
        try {
            switch (request.getMessageCase()) {
                case INIT -> start(request.getInit());
                case STDIN_DATA -> {
                    StdinFlow.write(
                            requireRun("stdin_data"),
                            request.getStdinData().getData().toByteArray(),
                            call,
                            stdinBudget);
                    return;
                }
                case STDIN_EOF -> requireRun("stdin_eof").closeStdin();
                case SIGNAL ->
                    requireRun("signal")
                            .signal(Signals.check(request.getSignal().getSignal()));
                case RESIZE ->
                    requireRun("resize").resize((int) request.getResize().getCols(), (int)
                            request.getResize().getRows());
                case MESSAGE_NOT_SET ->
                    throw Status.INVALID_ARGUMENT
                            .withDescription(
                                    "empty ExecRequest: set one of init, stdin_data, stdin_eof, signal, resize")
                            .asRuntimeException();
            }
            call.request(1);
        } catch (RuntimeException e) {
            fail(StatusErrors.toStatus(e));
        }
    }

    private ProcessRun requireRun(String what) {
        ProcessRun r = run;
        if (r == null) {
            throw Status.INVALID_ARGUMENT
                    .withDescription(what + " sent before init: the first message of an" + " Exec call must be init")
                    .asRuntimeException();
        }
        return r;
    }

    private void start(ExecInit init) {
        if (run != null) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("init sent twice: one Exec call runs one process")
                    .asRuntimeException();
        }
        Optional<ProcessSpec.TerminalSize> pty = init.hasPtyInfo()
                ? Optional.of(ProcessRequests.terminal((int) init.getPtyInfo().getCols(), (int)
                        init.getPtyInfo().getRows()))
                : Optional.empty();
        ProcessSpec spec = ProcessRequests.spec(
                init.getCommand(),
                init.getArgsList(),
                init.hasWorkdir() ? Optional.of(init.getWorkdir()) : Optional.empty(),
                init.getEnvMap(),
                pty);
        Optional<Duration> timeout = ProcessRequests.timeout(
                init.hasTimeoutSecs(),
                Duration.ofSeconds(Math.min(init.getTimeoutSecs(), Long.MAX_VALUE / 1000 / 1000)));
        LiveSandbox sandbox = sandboxes.requireRunning(environment, init.getSandboxId());
        ProcessRun started;
        try {
            started = ProcessRun.start(sandbox.runtime(), environment, spec, timeout, threads, this::output);
        } catch (ProcessStartException e) {
            throw Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException();
        }
        run = started;
        // a command that ended before its pid could be read reports 0, never a wrapped -1
        long pid = started.pid();
        send(ExecResponse.newBuilder()
                .setProcessStarted(ProcessStarted.newBuilder().setPid(pid > 0 && pid <= 0xFFFFFFFFL ? (int) pid : 0))
                .build());
        startedSent.countDown();
        started.done().whenComplete((result, failure) -> finish(result, failure, timeout));
    }

    private void output(OutputStreamKind kind, byte[] data) {
        try {
            startedSent.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        if (!gate.awaitReady()) {
            return; // the client went away; the process is being killed
        }
        OutputData.Stream stream = switch (kind) {
            case STDOUT -> OutputData.Stream.STREAM_STDOUT;
            case STDERR -> OutputData.Stream.STREAM_STDERR;
            case PTY -> OutputData.Stream.STREAM_PTY_OUTPUT;
        };
        // the pump handed the array over (see OutputSink): nobody writes to it again, so it needs no copy
        send(ExecResponse.newBuilder()
                .setOutputData(OutputData.newBuilder().setStream(stream).setData(UnsafeByteOperations.unsafeWrap(data)))
                .build());
    }

    private void finish(RunResult result, Throwable failure, Optional<Duration> timeout) {
        if (failure != null) {
            fail(StatusErrors.toStatus(failure));
            return;
        }
        ProcessExited.Builder exited = ProcessExited.newBuilder();
        result.status().exitCode().ifPresent(exited::setExitCode);
        result.status().signal().ifPresent(exited::setSignal);
        send(ExecResponse.newBuilder().setProcessExited(exited).build());
        if (result.timedOut()) {
            send(ExecResponse.newBuilder()
                    .setError(ExecError.newBuilder()
                            .setCode(Status.Code.DEADLINE_EXCEEDED.name())
                            .setMessage("the process timed out after "
                                    + timeout.map(Duration::toSeconds).orElse(0L)
                                    + "s; it and every process it started were killed"))
                    .build());
        }
        complete();
    }

    private synchronized void send(ExecResponse response) {
        if (closed || call.isCancelled()) {
            return;
        }
        call.onNext(response);
    }

    private synchronized void complete() {
        if (closed) {
            return;
        }
        closed = true;
        gate.close();
        if (!call.isCancelled()) {
            call.onCompleted();
        }
    }

    /** Reports an error as an ExecError event, then ends the call with the same status. */
    private synchronized void fail(Status status) {
        if (closed) {
            return;
        }
        String message = status.getDescription() == null ? status.getCode().name() : status.getDescription();
        send(ExecResponse.newBuilder()
                .setError(
                        ExecError.newBuilder().setCode(status.getCode().name()).setMessage(message))
                .build());
        closed = true;
        gate.close();
        ProcessRun r = run;
        if (r != null && r.running()) {
            r.kill();
        }
        if (!call.isCancelled()) {
            call.onError(status.asRuntimeException());
        }
    }

    private void cancelled() {
        gate.close();
        ProcessRun r = run;
        if (r != null && r.running()) {
            log.debug("Exec client went away; killing pid {}", r.pid());
            r.kill();
        }
    }

    @Override
    public void onError(Throwable t) {
        cancelled();
    }

    @Override
    public void onCompleted() {
        // no more messages from the client means no more stdin either
        ProcessRun r = run;
        if (r != null) {
            r.closeStdin();
        }
    }
}
