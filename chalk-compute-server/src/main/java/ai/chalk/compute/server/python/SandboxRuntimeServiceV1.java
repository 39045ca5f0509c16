package ai.chalk.compute.server.python;

import ai.chalk.compute.proto.sandbox.v1.ExecutePythonRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonResponse;
import ai.chalk.compute.proto.sandbox.v1.SandboxRuntimeServiceGrpc;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.exec.ByteBudget;
import ai.chalk.compute.server.exec.EnvironmentBytes;
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
    private final EnvironmentBytes artifactBudget;

    /**
     * @param artifactBudget the bound on artifact bytes read from interpreters and not yet sent on, of which one
     *                       environment holds at most half (a tenant whose clients never read refused every other
     *                       environment's charts when the bound was the server's alone)
     */
    public SandboxRuntimeServiceV1(SandboxManager sandboxes, ProcessThreads threads, EnvironmentBytes artifactBudget) {
        this.sandboxes = sandboxes;
        this.threads = threads;
        this.artifactBudget = artifactBudget;
    }

    /** The artifact budget for a heap of {@code maxHeapBytes}: a sixteenth of it. */
    public static EnvironmentBytes artifactBudget(long maxHeapBytes) {
        // one environment may always hold one artifact of the largest size, though half a small heap's budget is less
        return new EnvironmentBytes(
                new ByteBudget("Python artifacts in flight", maxHeapBytes / 16), DriverFrames.MAX_ARTIFACT_BYTES);
    }

    @Override
    public StreamObserver<ExecutePythonRequest> executePython(StreamObserver<ExecutePythonResponse> observer) {
        String environment = Caller.current().environment();
        return new PythonCall(
                sandboxes, environment, threads, artifactBudget.of(environment), (ServerCallStreamObserver<
                                ExecutePythonResponse>)
                        observer);
    }
}
