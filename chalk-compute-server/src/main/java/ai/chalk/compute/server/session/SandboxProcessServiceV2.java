package ai.chalk.compute.server.session;

import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandResponse;
import ai.chalk.compute.proto.sandbox.v2.GetSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.ListSessionsRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSessionsResponse;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.exec.MemoryBudgets;
import ai.chalk.compute.server.exec.OutputStreamKind;
import ai.chalk.compute.server.exec.ProcessRequests;
import ai.chalk.compute.server.exec.ProcessRun;
import ai.chalk.compute.server.exec.ProcessThreads;
import ai.chalk.compute.server.exec.RunResult;
import ai.chalk.compute.server.exec.StdinFlow;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.sandbox.LiveSandbox;
import ai.chalk.compute.server.sandbox.SandboxManager;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.Comparator;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * {@code chalk.sandbox.v2.SandboxProcessService}: one-shot commands and detachable sessions, in the sandboxes of the
 * caller's environment ({@link Caller}); another environment's sandbox answers NOT_FOUND.
 */
public final class SandboxProcessServiceV2 extends SandboxProcessServiceGrpc.SandboxProcessServiceImplBase {

    /** Most output {@code ExecCommand} collects per stream; beyond it, use a session to stream. */
    public static final int MAX_COLLECTED_BYTES = 64 << 20;

    private final SandboxManager sandboxes;
    private final ProcessThreads threads;
    private final long sessionBufferBytes;
    private final MemoryBudgets budgets;

    /**
     * @param sessionBufferBytes output buffered per session for clients that re-attach
     * @param budgets            the server-wide bounds on session buffers, unread stdin and collected output
     */
    public SandboxProcessServiceV2(
            SandboxManager sandboxes, ProcessThreads threads, long sessionBufferBytes, MemoryBudgets budgets) {
        this.sandboxes = sandboxes;
        this.threads = threads;
        this.sessionBufferBytes = sessionBufferBytes;
        this.budgets = budgets;
    }

    @Override
    public void execCommand(ExecCommandRequest request, StreamObserver<ExecCommandResponse> observer) {
        ProcessRun run;
        String environment = environment();
        Collected out = new Collected(budgets.collectedOutput().of(environment));
        Collected err = new Collected(budgets.collectedOutput().of(environment));
        Optional<Duration> timeout;
        byte[] stdin = request.hasStdin() ? request.getStdin().toByteArray() : new byte[0];
        EnvironmentBytes.Account stdinBudget = budgets.stdin().of(environment);
        EnvironmentBytes.Refusal stdinRefused = stdinBudget.tryReserve(stdin.length);
        if (stdinRefused != null) {
            observer.onError(StatusErrors.toStatus(StdinFlow.refused(stdin.length, stdinBudget, stdinRefused))
                    .asRuntimeException());
            return;
        }
        try {
            ProcessSpec spec = ProcessRequests.spec(
                    request.getCommand(),
                    request.getArgsList(),
                    request.hasWorkdir() ? Optional.of(request.getWorkdir()) : Optional.empty(),
                    request.getEnvVarsMap(),
                    Optional.empty());
            timeout = ProcessRequests.timeout(request.hasTimeout(), request.getTimeout());
            LiveSandbox sandbox = sandboxes.requireRunning(environment, request.getSandboxId());
            run = ProcessRun.start(
                    sandbox.runtime(),
                    environment,
                    spec,
                    timeout,
                    threads,
                    (kind, data) -> (kind == OutputStreamKind.STDERR ? err : out).add(data));
        } catch (ProcessStartException e) {
            stdinBudget.release(stdin.length);
            observer.onError(
                    Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException());
            return;
        } catch (RuntimeException e) {
            stdinBudget.release(stdin.length);
            observer.onError(StatusErrors.toStatus(e).asRuntimeException());
            return;
        }
        ((ServerCallStreamObserver<ExecCommandResponse>) observer).setOnCancelHandler(run::kill);
        // held, and counted, until the process has taken it (or exited without)
        AtomicBoolean stdinHeld = new AtomicBoolean(true);
        Runnable releaseStdin = () -> {
            if (stdinHeld.compareAndSet(true, false)) {
                stdinBudget.release(stdin.length);
            }
        };
        CompletableFuture<Void> written = run.writeStdin(stdin);
        written.whenComplete((ignored, failure) -> releaseStdin.run());
        run.closeStdin();
        Optional<Duration> limit = timeout;
        run.done().whenComplete((result, failure) -> {
            // the budgets are given back before the answer is sent: a client that runs its next command as soon as
            // this one answers finds them free (the answer holds its own copy of the output; stdin not yet taken is
            // still held by its writer, and counted until it is done)
            Runnable beforeAnswer = () -> {
                if (written.isDone()) {
                    releaseStdin.run(); // else the writer still holds the bytes (a background process keeps stdin)
                }
                out.release();
                err.release();
            };
            try {
                reply(observer, result, failure, limit, out, err, beforeAnswer);
            } finally {
                beforeAnswer.run();
            }
        });
    }

    private static void reply(
            StreamObserver<ExecCommandResponse> observer,
            RunResult result,
            Throwable failure,
            Optional<Duration> limit,
            Collected out,
            Collected err,
            Runnable beforeAnswer) {
        if (failure != null) {
            beforeAnswer.run();
            observer.onError(StatusErrors.toStatus(failure).asRuntimeException());
        } else if (result.timedOut()) {
            beforeAnswer.run();
            observer.onError(Status.DEADLINE_EXCEEDED
                    .withDescription("the command timed out after "
                            + limit.map(Duration::toSeconds).orElse(0L)
                            + "s; it and every process it started were killed")
                    .asRuntimeException());
        } else if (out.overflow || err.overflow) {
            beforeAnswer.run();
            observer.onError(Status.RESOURCE_EXHAUSTED
                    .withDescription("the command wrote more than "
                            + MAX_COLLECTED_BYTES + " bytes to " + (out.overflow ? "stdout" : "stderr")
                            + "; ExecCommand returns output whole, so stream large output with OpenSession")
                    .asRuntimeException());
        } else if (out.outOfBudget != null || err.outOfBudget != null) {
            String why = out.outOfBudget != null ? out.outOfBudget : err.outOfBudget;
            beforeAnswer.run();
            observer.onError(Status.RESOURCE_EXHAUSTED
                    .withDescription("the command's output did not fit: " + why
                            + " (output that ExecCommand calls running at once collect); try again later, or stream"
                            + " the output with OpenSession or v1 Exec")
                    .asRuntimeException());
        } else {
            int code = result.status()
                    .exitCode()
                    .orElse(128 + result.status().signal().orElse(0));
            ExecCommandResponse answer = ExecCommandResponse.newBuilder()
                    .setStdout(out.bytes())
                    .setStderr(err.bytes())
                    .setExitCode(code)
                    .build();
            beforeAnswer.run();
            observer.onNext(answer);
            observer.onCompleted();
        }
    }

    /**
     * Output collected for a one-shot command, up to {@link #MAX_COLLECTED_BYTES} and what the server-wide budget
     * of collected output allows.
     */
    private static final class Collected {
        private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        private final EnvironmentBytes.Account budget;
        private long reserved;
        private boolean overflow;
        /** Why the budget refused this output, said when it did; null while it takes it. */
        private @Nullable String outOfBudget;

        Collected(EnvironmentBytes.Account budget) {
            this.budget = budget;
        }

        synchronized void add(byte[] data) {
            if (overflow || outOfBudget != null) {
                return; // keep draining so the process is not blocked on a full pipe
            }
            if (buffer.size() + data.length > MAX_COLLECTED_BYTES) {
                overflow = true;
                return;
            }
            EnvironmentBytes.Refusal refusal = budget.tryReserve(data.length);
            if (refusal != null) {
                outOfBudget = budget.explain(refusal);
                return;
            }
            reserved += data.length;
            buffer.writeBytes(data);
        }

        /** The reply is built or the call failed: the buffer is no longer the server's to hold. */
        synchronized void release() {
            budget.release(reserved);
            reserved = 0;
            buffer.reset();
        }

        synchronized ByteString bytes() {
            return ByteString.copyFrom(buffer.toByteArray());
        }
    }

    @Override
    public StreamObserver<OpenSessionRequest> openSession(StreamObserver<OpenSessionResponse> observer) {
        return new SessionCall(
                sandboxes,
                environment(),
                threads,
                (ServerCallStreamObserver<OpenSessionResponse>) observer,
                sessionBufferBytes,
                budgets);
    }

    @Override
    public void getSession(GetSessionRequest request, StreamObserver<GetSessionResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetSessionResponse.newBuilder()
                        .setSession(SessionRegistry.of(sandboxes.requireLive(environment(), request.getSandboxId()))
                                .require(request.getSandboxId(), request.getSessionId())
                                .info())
                        .build());
    }

    @Override
    public void listSessions(ListSessionsRequest request, StreamObserver<ListSessionsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            ListSessionsResponse.Builder b = ListSessionsResponse.newBuilder();
            SessionRegistry.of(sandboxes.requireLive(environment(), request.getSandboxId())).all().stream()
                    .sorted(Comparator.comparing(Session::id))
                    .forEach(s -> b.addSessions(s.info()));
            return b.build();
        });
    }

    private static String environment() {
        return Caller.current().environment();
    }
}
