package ai.chalk.compute.server.python;

import ai.chalk.compute.proto.artifactstore.v1.Artifact;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonInterrupt;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonResponse;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonSpec;
import ai.chalk.compute.proto.sandbox.v1.PythonExecutionCompleted;
import ai.chalk.compute.proto.sandbox.v1.PythonOutput;
import ai.chalk.compute.proto.sandbox.v1.SandboxRuntimeServiceGrpc;
import io.grpc.Channel;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/** One ExecutePython call through the generated stub, as an independent client makes it, with what came back. */
final class PythonRun implements ClientResponseObserver<ExecutePythonRequest, ExecutePythonResponse> {

    /** Each response with the time it arrived (System.nanoTime). */
    record Timed(long nanos, ExecutePythonResponse response) {}

    final List<Timed> events = new CopyOnWriteArrayList<>();
    final CompletableFuture<Throwable> end = new CompletableFuture<>();
    private final boolean manualFlow;
    private final Consumer<PythonRun> onFirstOutput;
    private volatile boolean sawOutput;
    volatile ClientCallStreamObserver<ExecutePythonRequest> requests;

    private PythonRun(boolean manualFlow, Consumer<PythonRun> onFirstOutput) {
        this.manualFlow = manualFlow;
        this.onFirstOutput = onFirstOutput;
    }

    static PythonRun start(Channel channel, ExecutePythonSpec spec) {
        return start(channel, spec, false, r -> {});
    }

    static PythonRun start(
            Channel channel, ExecutePythonSpec spec, boolean manualFlow, Consumer<PythonRun> onFirstOutput) {
        PythonRun run = new PythonRun(manualFlow, onFirstOutput);
        StreamObserver<ExecutePythonRequest> out =
                SandboxRuntimeServiceGrpc.newStub(channel).executePython(run);
        out.onNext(ExecutePythonRequest.newBuilder().setSpec(spec).build());
        return run;
    }

    static ExecutePythonSpec.Builder spec(String sandboxId, String source) {
        return ExecutePythonSpec.newBuilder().setSandboxId(sandboxId).setSource(source);
    }

    void interrupt() {
        requests.onNext(ExecutePythonRequest.newBuilder()
                .setInterrupt(ExecutePythonInterrupt.getDefaultInstance())
                .build());
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<ExecutePythonRequest> stream) {
        this.requests = stream;
        if (manualFlow) {
            stream.disableAutoRequestWithInitial(1);
        }
    }

    @Override
    public void onNext(ExecutePythonResponse value) {
        events.add(new Timed(System.nanoTime(), value));
        if (value.hasOutput() && !sawOutput) {
            sawOutput = true;
            onFirstOutput.accept(this);
        }
    }

    @Override
    public void onError(Throwable t) {
        end.complete(t);
    }

    @Override
    public void onCompleted() {
        requests.onCompleted();
        end.complete(null);
    }

    /** Waits for the end; fails on an error status. */
    PythonRun await(Duration timeout) throws Exception {
        Throwable t = end.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (t != null) {
            throw new AssertionError("ExecutePython failed: " + t, t);
        }
        return this;
    }

    String stdout() {
        return text(PythonOutput.Stream.STREAM_STDOUT);
    }

    String stderr() {
        return text(PythonOutput.Stream.STREAM_STDERR);
    }

    private String text(PythonOutput.Stream stream) {
        StringBuilder b = new StringBuilder();
        for (Timed t : events) {
            if (t.response().hasOutput() && t.response().getOutput().getStream() == stream) {
                b.append(t.response().getOutput().getData().toStringUtf8());
            }
        }
        return b.toString();
    }

    List<Artifact> artifacts() {
        List<Artifact> out = new ArrayList<>();
        events.stream()
                .filter(t -> t.response().hasArtifact())
                .forEach(t -> out.add(t.response().getArtifact()));
        return out;
    }

    /** The text/plain of the last expression's value, or null. */
    String resultText() {
        return artifacts().stream()
                .filter(a -> a.getContentType().equals("text/plain")
                        && a.getMetadata()
                                .getFieldsOrThrow("display")
                                .getStringValue()
                                .equals("execute_result"))
                .map(a -> a.getInline().getData().toStringUtf8())
                .findFirst()
                .orElse(null);
    }

    PythonExecutionCompleted completed() {
        ExecutePythonResponse last = events.get(events.size() - 1).response();
        if (!last.hasCompleted()) {
            throw new AssertionError("the last response is not completed: " + last);
        }
        return last.getCompleted();
    }
}
