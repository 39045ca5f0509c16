package ai.chalk.compute.code;

import ai.chalk.compute.proto.artifactstore.v1.Artifact;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonInterrupt;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonResponse;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonSpec;
import ai.chalk.compute.proto.sandbox.v1.PythonExecutionCompleted;
import ai.chalk.compute.proto.sandbox.v1.PythonExecutionOutcome;
import ai.chalk.compute.proto.sandbox.v1.PythonOutput;
import ai.chalk.compute.proto.sandbox.v1.SandboxRuntimeServiceGrpc;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.jspecify.annotations.Nullable;

/**
 * Python snippets through {@code SandboxRuntimeService/ExecutePython}: one call per snippet, output handed to the
 * callbacks as it comes, artifacts grouped back into MIME bundles by their {@code metadata.bundle}.
 */
final class PythonRunner implements SnippetRunner {

    /** Results up to the server's 16 MiB artifact limit, with room for the message around them. */
    static final int MAX_INBOUND = 20 << 20;

    private static final String ERROR_TYPE = "application/vnd.chalk.python-error+json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Channel channel;
    private final String sandboxId;
    private volatile @Nullable ClientCallStreamObserver<ExecutePythonRequest> running;

    PythonRunner(Channel channel, String sandboxId) {
        this.channel = channel;
        this.sandboxId = sandboxId;
    }

    @Override
    public ExecutionResult run(String code, RunOptions options, Optional<Duration> defaultTimeout) {
        ExecutePythonSpec.Builder spec = ExecutePythonSpec.newBuilder()
                .setSandboxId(sandboxId)
                .setSource(code)
                .setCaptureCharts(options.charts())
                .putAllEnv(options.envVars());
        options.timeoutOption()
                .or(() -> defaultTimeout)
                .ifPresent(t -> spec.setTimeoutSecs(Math.max(1, (t.toMillis() + 999) / 1000)));
        options.artifactLimit().ifPresent(spec::setMaxArtifactBytes);
        options.workdirOption().ifPresent(spec::setWorkdir);
        OutputLines stdout = new OutputLines(options.stdoutCallback(), false);
        OutputLines stderr = new OutputLines(options.stderrCallback(), true);
        List<Artifact> artifacts = new ArrayList<>();
        CompletableFuture<@Nullable PythonExecutionCompleted> done = new CompletableFuture<>();
        ClientResponseObserver<ExecutePythonRequest, ExecutePythonResponse> observer = new ClientResponseObserver<>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<ExecutePythonRequest> requests) {
                running = requests;
            }

            @Override
            public void onNext(ExecutePythonResponse response) {
                switch (response.getMessageCase()) {
                    case OUTPUT ->
                        (response.getOutput().getStream() == PythonOutput.Stream.STREAM_STDERR ? stderr : stdout)
                                .add(response.getOutput().getData().toByteArray());
                    case ARTIFACT -> {
                        synchronized (artifacts) {
                            artifacts.add(response.getArtifact());
                        }
                    }
                    case COMPLETED -> done.complete(response.getCompleted());
                    default -> {
                        // started: nothing to keep
                    }
                }
            }

            @Override
            public void onError(Throwable t) {
                done.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {
                done.complete(null);
            }
        };
        var requests = SandboxRuntimeServiceGrpc.newStub(channel)
                .withMaxInboundMessageSize(MAX_INBOUND)
                .executePython(observer);
        requests.onNext(ExecutePythonRequest.newBuilder().setSpec(spec).build());
        PythonExecutionCompleted completed;
        try {
            completed = done.get();
            requests.onCompleted();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            requests.onError(Status.CANCELLED
                    .withDescription("the caller was interrupted")
                    .asRuntimeException());
            return ExecutionResult.failed(stdout.text(), stderr.text(), List.of(), "interrupted while waiting");
        } catch (ExecutionException e) {
            stdout.finish();
            stderr.finish();
            Status status = Status.fromThrowable(e.getCause());
            return ExecutionResult.failed(
                    stdout.text(),
                    stderr.text(),
                    bundles(artifacts),
                    status.getCode() + ": "
                            + Optional.ofNullable(status.getDescription()).orElse("no message"));
        } finally {
            running = null;
        }
        stdout.finish();
        stderr.finish();
        List<Result> results;
        synchronized (artifacts) {
            results = bundles(artifacts);
        }
        if (completed == null) {
            return ExecutionResult.failed(
                    stdout.text(), stderr.text(), results, "the server ended the call without a result");
        }
        return result(completed, stdout.text(), stderr.text(), results, codeError(artifacts, completed));
    }

    /** Sends an interrupt to the snippet running now, if any: a KeyboardInterrupt in it. */
    @Override
    public void interrupt() {
        var r = running;
        if (r != null) {
            r.onNext(ExecutePythonRequest.newBuilder()
                    .setInterrupt(ExecutePythonInterrupt.getDefaultInstance())
                    .build());
        }
    }

    private static ExecutionResult result(
            PythonExecutionCompleted c, String stdout, String stderr, List<Result> results, Optional<CodeError> error) {
        List<SkippedArtifact> skipped = c.getSkippedArtifactsList().stream()
                .map(s -> new SkippedArtifact(s.getName(), s.getReason(), s.getByteSize()))
                .toList();
        PythonExecutionOutcome outcome = c.getOutcome();
        boolean interpreterEnded = c.getExitCode() != 0;
        if (outcome == PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_TIMED_OUT
                || (outcome == PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_INTERRUPTED && interpreterEnded)
                || outcome == PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_UNSPECIFIED
                || outcome == PythonExecutionOutcome.UNRECOGNIZED) {
            return new ExecutionResult(
                    stdout,
                    stderr,
                    results,
                    Optional.empty(),
                    false,
                    Optional.of(c.getErrorMessage().isEmpty() ? outcome.name() : c.getErrorMessage()),
                    OptionalInt.empty(),
                    skipped);
        }
        if (interpreterEnded || c.getErrorMessage().startsWith("SystemExit:")) {
            return new ExecutionResult(
                    stdout,
                    stderr,
                    results,
                    Optional.empty(),
                    true,
                    Optional.empty(),
                    OptionalInt.of(c.getExitCode()),
                    skipped);
        }
        Optional<CodeError> codeError =
                outcome == PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_SUCCEEDED ? Optional.empty() : error;
        return new ExecutionResult(
                stdout, stderr, results, codeError, true, Optional.empty(), OptionalInt.empty(), skipped);
    }

    /**
     * The error the server sent as an artifact; from a server that sends none, the last line of the traceback in
     * {@code error_message} ({@code Name: value}).
     */
    private static Optional<CodeError> codeError(List<Artifact> artifacts, PythonExecutionCompleted c) {
        for (Artifact a : artifacts) {
            if (a.getContentType().equals(ERROR_TYPE)) {
                try {
                    JsonNode node = JSON.readTree(a.getInline().getData().toByteArray());
                    return Optional.of(new CodeError(
                            node.path("ename").asText(),
                            node.path("evalue").asText(),
                            node.path("traceback").asText()));
                } catch (IOException e) {
                    break;
                }
            }
        }
        String message = c.getErrorMessage().strip();
        if (message.isEmpty()) {
            return Optional.of(new CodeError("Error", c.getOutcome().name(), ""));
        }
        String last = message.substring(message.lastIndexOf('\n') + 1);
        int colon = last.indexOf(": ");
        return Optional.of(
                colon > 0
                        ? new CodeError(last.substring(0, colon), last.substring(colon + 2), message)
                        : new CodeError(last, "", message));
    }

    /** Artifacts back into MIME bundles: those of one displayed value share {@code metadata.bundle}. */
    private static List<Result> bundles(List<Artifact> artifacts) {
        Map<String, Map<String, byte[]>> byBundle = new LinkedHashMap<>();
        Map<String, Boolean> main = new LinkedHashMap<>();
        for (Artifact a : artifacts) {
            if (a.getContentType().equals(ERROR_TYPE)) {
                continue;
            }
            var fields = a.getMetadata().getFieldsMap();
            String key = fields.containsKey("bundle")
                    ? String.valueOf((long) fields.get("bundle").getNumberValue())
                    : a.getId();
            byBundle.computeIfAbsent(key, k -> new LinkedHashMap<>())
                    .put(a.getContentType(), a.getInline().getData().toByteArray());
            main.put(
                    key,
                    fields.containsKey("display")
                            && fields.get("display").getStringValue().equals("execute_result"));
        }
        List<Result> results = new ArrayList<>();
        byBundle.forEach((k, data) -> results.add(new Result(data, main.get(k))));
        return results;
    }
}
