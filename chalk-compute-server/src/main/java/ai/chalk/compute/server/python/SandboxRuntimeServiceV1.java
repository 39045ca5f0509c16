package ai.chalk.compute.server.python;

import ai.chalk.compute.proto.sandbox.v1.ExecutePythonRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonResponse;
import ai.chalk.compute.proto.sandbox.v1.SandboxRuntimeServiceGrpc;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.exec.ByteBudget;
import ai.chalk.compute.server.exec.ProcessThreads;
import ai.chalk.compute.server.sandbox.SandboxManager;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;

/**
 * {@code chalk.sandbox.v1.SandboxRuntimeService}: {@code ExecutePython} in the caller's sandboxes ({@link Caller}),
 * one persistent interpreter per sandbox.
 */
public final class SandboxRuntimeServiceV1 extends SandboxRuntimeServiceGrpc.SandboxRuntimeServiceImplBase {

    private final SandboxManager sandboxes;
    private final ProcessThreads threads;
    private final ByteBudget artifactBudget;

    /**
     * @param artifactBudget the server-wide bound on artifact bytes read from interpreters and not yet sent on
     */
    public SandboxRuntimeServiceV1(SandboxManager sandboxes, ProcessThreads threads, ByteBudget artifactBudget) {
        this.sandboxes = sandboxes;
        this.threads = threads;
        this.artifactBudget = artifactBudget;
    }

    /** The artifact budget for a heap of {@code maxHeapBytes}: a sixteenth of it. */
    public static ByteBudget artifactBudget(long maxHeapBytes) {
        return new ByteBudget("Python artifacts in flight", maxHeapBytes / 16);
    }

    @Override
    public StreamObserver<ExecutePythonRequest> executePython(StreamObserver<ExecutePythonResponse> observer) {
        return new PythonCall(
                sandboxes, Caller.current().environment(), threads, artifactBudget, (ServerCallStreamObserver<
                                ExecutePythonResponse>)
                        observer);
    }
}
