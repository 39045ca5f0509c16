package ai.chalk.compute.function.worker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.function.FunctionPayloads;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import com.acme.Naps;
import com.google.protobuf.ByteString;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code CHALK_WORKER_MAX_CONCURRENT}: the worker itself runs no more calls at once than the version's
 * {@code max_concurrent}, so a call the server stopped waiting for (timed out) still holds its place.
 */
class WorkerConcurrencyTest {

    @TempDir
    Path dir;

    @Test
    void theWorkerRunsAtMostItsLimitOfCallsAtOnce() throws Exception {
        WorkerSettings settings = WorkerSettings.fromEnv(Map.of(
                WorkerSettings.SOCKET,
                dir.resolve("w.sock").toString(),
                WorkerSettings.FUNCTIONS,
                "nap=com.acme.Naps#nap",
                WorkerSettings.MAX_CONCURRENT,
                "1"));
        assertThat(settings.maxConcurrent()).isEqualTo(1);
        FunctionRegistry registry = new FunctionRegistry();
        registry.register(Naps.class);
        FunctionPayloads nap = registry.get("nap").payloads();
        try (FunctionWorker worker = FunctionWorker.start(settings)) {
            ManagedChannel channel = Grpc.newChannelBuilder(
                            "unix:" + settings.socket(), InsecureChannelCredentials.create())
                    .build();
            try {
                List<CompletableFuture<CallFunctionResponse>> calls = IntStream.range(0, 3)
                        .mapToObj(i -> call(channel, nap.encodeCall(200L)))
                        .toList();
                for (CompletableFuture<CallFunctionResponse> c : calls) {
                    Object most = nap.decodeResult(
                            c.get(30, TimeUnit.SECONDS).getFeatherStream().toByteArray(), DecodeContext.empty());
                    assertThat(most).as("calls running at once, at the most").isEqualTo(1);
                }
            } finally {
                channel.shutdownNow();
            }
        }
    }

    private static CompletableFuture<CallFunctionResponse> call(ManagedChannel channel, byte[] payload) {
        return FunctionWorkerProcessTest.send(
                        channel,
                        List.of(CallFunctionRequest.newBuilder()
                                .setName("nap")
                                .setFeatherStream(ByteString.copyFrom(payload))
                                .build()),
                        new ArrayList<>())
                .thenApply(r -> r.get(0));
    }
}
