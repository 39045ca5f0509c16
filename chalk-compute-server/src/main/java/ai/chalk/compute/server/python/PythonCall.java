package ai.chalk.compute.server.python;

import ai.chalk.compute.proto.artifactstore.v1.Artifact;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonResponse;
import ai.chalk.compute.proto.sandbox.v1.PythonExecutionCompleted;
import ai.chalk.compute.proto.sandbox.v1.PythonExecutionStarted;
import ai.chalk.compute.proto.sandbox.v1.PythonOutput;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.exec.ProcessThreads;
import ai.chalk.compute.server.grpc.ReadyGate;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.sandbox.LiveSandbox;
import ai.chalk.compute.server.sandbox.SandboxManager;
import ai.chalk.compute.server.threads.EnvironmentShares;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * One {@code ExecutePython} call: the spec starts an execution in the sandbox's interpreter, an interrupt stops it
 * (a KeyboardInterrupt; the interpreter keeps its state). The server answers started, output and artifacts as they
 * come (only as fast as the client reads them), then completed. A client that goes away interrupts its snippet.
 */
final class PythonCall implements StreamObserver<ExecutePythonRequest> {

    private final SandboxManager sandboxes;
    private final String environment;
    private final ProcessThreads threads;
    private final EnvironmentBytes.Account artifactBudget;
    private final ServerCallStreamObserver<ExecutePythonResponse> call;
    private final ReadyGate gate;
    private volatile PythonExecution execution;
    /**
     * The snippet's place among the running commands: given back before the client hears that it completed, so that
     * its next snippet, sent on that answer, finds the place free. A call failed from another thread keeps it until
     * the snippet's thread is free (it may still be waiting for the interpreter's turn).
     */
    private volatile EnvironmentShares.@Nullable Place place;
    /** The thread running the snippet: a failure it reports is its last act, and gives the place back first. */
    private volatile @Nullable Thread runner;

    private boolean closed;

    PythonCall(
            SandboxManager sandboxes,
            String environment,
            ProcessThreads threads,
            EnvironmentBytes.Account artifactBudget,
            ServerCallStreamObserver<ExecutePythonResponse> call) {
        this.sandboxes = sandboxes;
        this.environment = environment;
        this.threads = threads;
        this.artifactBudget = artifactBudget;
        this.call = call;
        this.gate = new ReadyGate(call);
        call.setOnReadyHandler(gate);
        call.setOnCancelHandler(this::cancelled);
    }

    @Override
    public void onNext(ExecutePythonRequest request) {
        try {
            switch (request.getMessageCase()) {
                case SPEC -> start(PythonRequest.of(request.getSpec()));
                case INTERRUPT -> {
                    PythonExecution e = execution;
                    if (e == null) {
                        throw Status.INVALID_ARGUMENT
                                .withDescription("interrupt sent before spec: the first message must be the spec")
                                .asRuntimeException();
                    }
                    e.stop(PythonExecution.Stop.INTERRUPT);
                }
                case MESSAGE_NOT_SET ->
                    throw Status.INVALID_ARGUMENT
                            .withDescription("empty ExecutePythonRequest: set spec or interrupt")
                            .asRuntimeException();
            }
        } catch (RuntimeException e) {
            fail(StatusErrors.toStatus(e));
        }
    }

    private void start(PythonRequest request) {
        if (execution != null) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("spec sent twice: one ExecutePython call runs one snippet")
                    .asRuntimeException();
        }
        LiveSandbox sandbox = sandboxes.requireRunning(environment, request.sandboxId());
        // a snippet holds a thread from here, waiting for its turn at the sandbox's interpreter, until it has run:
        // counted with the environment's other commands
        EnvironmentShares.Place place = threads.commands().take(environment);
        this.place = place;
        try {
            PythonInterpreter interpreter = sandbox.attachment(
                    PythonInterpreter.class,
                    () -> new PythonInterpreter(sandbox.id(), sandbox.runtime(), threads, artifactBudget));
            PythonExecution e = new PythonExecution(UUID.randomUUID().toString(), request, this, threads);
            execution = e;
            send(ExecutePythonResponse.newBuilder()
                    .setStarted(PythonExecutionStarted.newBuilder().setExecutionId(e.id()))
                    .build());
            threads.pumps().execute(() -> {
                runner = Thread.currentThread();
                try {
                    interpreter.run(e);
                } catch (RuntimeException failure) {
                    fail(StatusErrors.toStatus(failure));
                } finally {
                    place.close();
                }
            });
        } catch (RuntimeException | Error failure) {
            place.close();
            throw failure;
        }
    }

    /** Whether the call has had its last answer (it completed, or the server failed it). */
    synchronized boolean answered() {
        return closed;
    }

    /** Whether the client is gone: output is no longer sent, and the snippet is being interrupted. */
    boolean gone() {
        return call.isCancelled();
    }

    void output(boolean stderr, byte[] data) {
        if (gate.awaitReady()) {
            send(ExecutePythonResponse.newBuilder()
                    .setOutput(PythonOutput.newBuilder()
                            .setStream(stderr ? PythonOutput.Stream.STREAM_STDERR : PythonOutput.Stream.STREAM_STDOUT)
                            .setData(ByteString.copyFrom(data)))
                    .build());
        }
    }

    void artifact(Artifact artifact) {
        if (gate.awaitReady()) {
            send(ExecutePythonResponse.newBuilder().setArtifact(artifact).build());
        }
    }

    synchronized void completed(PythonExecutionCompleted completed) {
        leave();
        send(ExecutePythonResponse.newBuilder().setCompleted(completed).build());
        if (closed) {
            return;
        }
        closed = true;
        gate.close();
        if (!call.isCancelled()) {
            call.onCompleted();
        }
    }

    private synchronized void send(ExecutePythonResponse response) {
        if (closed || call.isCancelled()) {
            return;
        }
        call.onNext(response);
    }

    synchronized void fail(Status status) {
        if (closed) {
            return;
        }
        closed = true;
        gate.close();
        PythonExecution e = execution;
        if (e != null) {
            e.stop(PythonExecution.Stop.INTERRUPT);
        }
        if (Thread.currentThread() == runner) {
            leave(); // the snippet's own thread, about to be free
        }
        if (!call.isCancelled()) {
            call.onError(status.asRuntimeException());
        }
    }

    private void leave() {
        EnvironmentShares.Place p = place;
        if (p != null) {
            p.close();
        }
    }

    private void cancelled() {
        gate.close();
        PythonExecution e = execution;
        if (e != null) {
            e.stop(PythonExecution.Stop.INTERRUPT);
        }
    }

    @Override
    public void onError(Throwable t) {
        cancelled();
    }

    @Override
    public void onCompleted() {
        // the client sends nothing more; the snippet runs on
    }
}
