package ai.chalk.compute.function.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.RemoteExecutionException;
import ai.chalk.compute.function.FunctionPayloads;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.proto.common.v1.ChalkError;
import ai.chalk.compute.proto.common.v1.ErrorCode;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallServiceGrpc;
import com.acme.Embedder;
import com.acme.Orders;
import com.google.protobuf.ByteString;
import io.grpc.Channel;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/** A real worker in a child JVM, serving on a Unix socket, called as the server calls it. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FunctionWorkerProcessTest {

    private static final String FUNCTIONS = "add=com.acme.Orders#add,search_orders=com.acme.Orders#search,"
            + "fail=com.acme.Orders#fail,Embedder.embed=com.acme.Embedder#embed";

    Path dir;
    Process worker;
    Path socket;
    Path log;
    ManagedChannel channel;
    final FunctionRegistry local = new FunctionRegistry();

    @BeforeAll
    void startWorker(@TempDir Path tempDir) throws Exception {
        dir = tempDir;
        local.register(Orders.class);
        local.register(Embedder.class);
        socket = dir.resolve("worker.sock");
        log = dir.resolve("worker.log");
        worker = startJvm(
                Map.of(
                        "CHALK_WORKER_SOCKET",
                        socket.toString(),
                        "CHALK_WORKER_FUNCTIONS",
                        FUNCTIONS,
                        "CHALK_WORKER",
                        "plain",
                        "CHALK_WORKER_ID",
                        "w-1"),
                log);
        channel = Grpc.newChannelBuilder("unix:" + socket, InsecureChannelCredentials.create())
                .build();
        awaitServing(channel, worker, log);
    }

    /** Waits for health to report SERVING; fails with the worker's output when it does not. */
    static void awaitServing(ManagedChannel channel, Process process, Path output) throws Exception {
        HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);
        try {
            await().atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(100))
                    .ignoreExceptions()
                    .until(() -> process.isAlive()
                            && health.withDeadlineAfter(2, TimeUnit.SECONDS)
                                            .check(HealthCheckRequest.getDefaultInstance())
                                            .getStatus()
                                    == HealthCheckResponse.ServingStatus.SERVING);
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            throw new AssertionError("the worker never served; its output:\n" + Files.readString(output), e);
        }
    }

    @AfterAll
    void stopWorker() throws Exception {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (worker != null && worker.isAlive()) {
            worker.destroyForcibly().waitFor();
        }
    }

    static Process startJvm(Map<String, String> env, Path output) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder = new ProcessBuilder(
                java, "-Xmx128m", "-cp", System.getProperty("java.class.path"), FunctionWorker.class.getName());
        builder.environment().putAll(env);
        builder.redirectErrorStream(true).redirectOutput(output.toFile());
        return builder.start();
    }

    @Test
    void callsReturnTheFunctionsResultOneRowPerCall() throws Exception {
        FunctionPayloads add = local.get("add").payloads();
        List<CallFunctionResponse> responses = exchange(List.of(request(
                "add", add.encodeBatch(List.of(new Object[] {2, 3}, new Object[] {10, -4}, new Object[] {0, 0})))));

        assertThat(responses).hasSize(1);
        assertThat(add.decodeResults(responses.get(0).getFeatherStream().toByteArray(), DecodeContext.empty()))
                .containsExactly(5, 6, 0);
    }

    @Test
    void severalRequestsOnOneStreamAreAnsweredInOrder() throws Exception {
        FunctionPayloads add = local.get("add").payloads();
        FunctionPayloads search = local.get("search_orders").payloads();
        FunctionPayloads embed = local.get("Embedder.embed").payloads();
        List<CallFunctionResponse> responses = exchange(List.of(
                request("add", add.encodeCall(1, 1)),
                request("search_orders", search.encodeCall("sku", 2, Orders.Tier.FREE, java.util.Optional.of("eu"))),
                request("Embedder.embed", embed.encodeCall("Hello World")),
                request("add", add.encodeCall(40, 2))));

        assertThat(responses).hasSize(4);
        assertThat(add.decodeResult(bytes(responses.get(0)), DecodeContext.empty()))
                .isEqualTo(2);
        assertThat(search.decodeResult(bytes(responses.get(1)), DecodeContext.empty()))
                .isEqualTo(List.of(
                        new Orders.Order("sku-0", 0, List.of("FREE", "eu")),
                        new Orders.Order("sku-1", 1, List.of("FREE", "eu"))));
        assertThat(embed.decodeResult(bytes(responses.get(2)), DecodeContext.empty()))
                .isEqualTo(List.of(11f, 2f));
        assertThat(add.decodeResult(bytes(responses.get(3)), DecodeContext.empty()))
                .isEqualTo(42);
    }

    @Test
    void aUserFailureEndsTheCallWithUnknownAndTheChalkErrorTrailer() {
        FunctionPayloads fail = local.get("fail").payloads();
        Throwable thrown = catchCause(() -> exchange(List.of(request("fail", fail.encodeCall("card declined")))));

        assertThat(thrown).isInstanceOf(StatusRuntimeException.class);
        StatusRuntimeException e = (StatusRuntimeException) thrown;
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN);
        assertThat(e.getStatus().getDescription()).isEqualTo("card declined");
        ChalkError error = e.getTrailers().get(RemoteExecutionException.ERROR_TRAILER);
        assertThat(error).isNotNull();
        assertThat(error.getCode()).isEqualTo(ErrorCode.ERROR_CODE_RESOLVER_FAILED);
        assertThat(error.getException().getKind()).isEqualTo("java.lang.IllegalStateException");
        assertThat(error.getException().getMessage()).isEqualTo("card declined");
        assertThat(error.getException().getStacktrace())
                .startsWith("java.lang.IllegalStateException: card declined\n\tat com.acme.Orders.fail(Orders.java:")
                .doesNotContain("reflect")
                .doesNotContain("ai.chalk.compute")
                .doesNotContain("io.grpc");
        assertThat(error.getException().getInternalStacktrace())
                .contains("at com.acme.Orders.fail(")
                .contains("ai.chalk.compute.function.RegisteredFunction");

        ChalkComputeException decoded = RemoteExecutionException.fromCall(e);
        assertThat(decoded).isInstanceOfSatisfying(RemoteExecutionException.class, r -> {
            assertThat(r.statusCode()).isEqualTo(Status.Code.UNKNOWN);
            assertThat(r.exceptionType()).isEqualTo("java.lang.IllegalStateException");
            assertThat(r.remoteMessage()).isEqualTo("card declined");
            assertThat(r.remoteTraceback()).isEqualTo(error.getException().getStacktrace());
            assertThat(r.internalTraceback()).isEqualTo(error.getException().getInternalStacktrace());
            assertThat(r.callId()).isEmpty(); // the worker adds none; the server does
            assertThat(r.getMessage())
                    .contains("remote java.lang.IllegalStateException: card declined", "at com.acme.Orders.fail(");
        });
    }

    /** The server tells a function's output from the rest of the replica's by this tag (functions-protocol §3). */
    @Test
    void whatACallWritesIsTaggedWithItsFunctionAndWhatTheWorkerWritesOutsideCallsIsNot() {
        FunctionPayloads fail = local.get("fail").payloads();
        catchCause(() -> exchange(List.of(request("fail", fail.encodeCall("tag me")))));

        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(Files.readString(log))
                        // logged through logback's console appender on the call's thread
                        .containsPattern("(?m)^\\[chalk-function fail\\] [0-9:.]+ INFO .* fail threw"
                                + " java.lang.IllegalStateException: tag me$")
                        // the worker's own start, on its main thread
                        .containsPattern("(?m)^[0-9:.]+ INFO .* worker w-1 serves "));
    }

    @Test
    void aFailureEndsTheStreamAfterTheResponsesBeforeIt() {
        FunctionPayloads add = local.get("add").payloads();
        FunctionPayloads fail = local.get("fail").payloads();
        List<CallFunctionResponse> received = new ArrayList<>();
        Throwable thrown = catchCause(() -> exchange(
                List.of(
                        request("add", add.encodeCall(1, 2)),
                        request("fail", fail.encodeCall("second")),
                        request("add", add.encodeCall(3, 4))),
                received));

        assertThat(Status.fromThrowable(thrown).getCode()).isEqualTo(Status.Code.UNKNOWN);
        assertThat(received).hasSize(1);
        assertThat(add.decodeResult(bytes(received.get(0)), DecodeContext.empty()))
                .isEqualTo(3);
    }

    @Test
    void anUnknownFunctionOrAMalformedPayloadIsNotAUserFailure() {
        Throwable unknown = catchCause(() -> exchange(List.of(request("nope", new byte[0]))));
        assertThat(Status.fromThrowable(unknown).getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(Status.fromThrowable(unknown).getDescription())
                .contains("no function 'nope'", "add", "Embedder.embed");
        assertThat(RemoteExecutionException.fromCall(unknown)).isNotInstanceOf(RemoteExecutionException.class);

        Throwable malformed = catchCause(() -> exchange(List.of(request("add", new byte[] {1, 2, 3}))));
        assertThat(Status.fromThrowable(malformed).getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    }

    @Test
    void sigtermStopsTheWorkerCleanlyAndRemovesItsSocket() throws Exception {
        Path otherSocket = dir.resolve("other.sock");
        Process other = startJvm(
                Map.of(
                        "CHALK_WORKER_SOCKET",
                        otherSocket.toString(),
                        "CHALK_WORKER_FUNCTIONS",
                        "add=com.acme.Orders#add"),
                dir.resolve("other.log"));
        ManagedChannel otherChannel = Grpc.newChannelBuilder("unix:" + otherSocket, InsecureChannelCredentials.create())
                .build();
        try {
            awaitServing(otherChannel, other, dir.resolve("other.log"));
            other.destroy(); // SIGTERM
            assertThat(other.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(other.exitValue())
                    .as(Files.readString(dir.resolve("other.log")))
                    .isZero();
            assertThat(otherSocket).doesNotExist();
        } finally {
            otherChannel.shutdownNow();
            other.destroyForcibly();
        }
    }

    @Test
    void aWorkerThatCannotLoadItsFunctionsExitsWithTheReason() throws Exception {
        Path out = dir.resolve("spring.log");
        Process spring = startJvm(
                Map.of(
                        "CHALK_WORKER_SOCKET",
                        dir.resolve("s.sock").toString(),
                        "CHALK_WORKER_FUNCTIONS",
                        "add=com.acme.Orders#add",
                        "CHALK_WORKER",
                        "spring:com.acme.App"),
                out);
        assertThat(spring.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(spring.exitValue()).isEqualTo(1);
        assertThat(Files.readString(out))
                .contains("CHALK_WORKER=spring:com.acme.App needs the Chalk Compute Spring Boot starter");

        Path wrong = dir.resolve("wrong.log");
        Process misnamed = startJvm(
                Map.of(
                        "CHALK_WORKER_SOCKET",
                        dir.resolve("w.sock").toString(),
                        "CHALK_WORKER_FUNCTIONS",
                        "plus=com.acme.Orders#add"),
                wrong);
        assertThat(misnamed.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(misnamed.exitValue()).isEqualTo(1);
        assertThat(Files.readString(wrong))
                .contains("plus=com.acme.Orders#add: com.acme.Orders registers no function named 'plus'");
    }

    private static byte[] bytes(CallFunctionResponse response) {
        return response.getFeatherStream().toByteArray();
    }

    private static CallFunctionRequest request(String name, byte[] payload) {
        return CallFunctionRequest.newBuilder()
                .setName(name)
                .setFeatherStream(ByteString.copyFrom(payload))
                .build();
    }

    private List<CallFunctionResponse> exchange(List<CallFunctionRequest> requests) throws Exception {
        return exchange(requests, new ArrayList<>());
    }

    /** Sends every request on one stream, collecting responses into {@code received}. */
    private List<CallFunctionResponse> exchange(List<CallFunctionRequest> requests, List<CallFunctionResponse> received)
            throws Exception {
        return send(channel, requests, received).get(60, TimeUnit.SECONDS);
    }

    /**
     * Sends every request on one {@code CallFunction} stream to a worker, collecting responses into {@code received};
     * completes with them when the worker ends the stream.
     */
    static CompletableFuture<List<CallFunctionResponse>> send(
            Channel channel, List<CallFunctionRequest> requests, List<CallFunctionResponse> received) {
        CompletableFuture<List<CallFunctionResponse>> done = new CompletableFuture<>();
        StreamObserver<CallFunctionRequest> out = RemoteCallServiceGrpc.newStub(channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .callFunction(new StreamObserver<>() {
                    @Override
                    public void onNext(CallFunctionResponse value) {
                        received.add(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                        done.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {
                        done.complete(received);
                    }
                });
        requests.forEach(out::onNext);
        out.onCompleted();
        return done;
    }

    private interface Call {
        Object run() throws Exception;
    }

    private static Throwable catchCause(Call call) {
        try {
            call.run();
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            return e;
        }
        throw new AssertionError("the call succeeded");
    }
}
