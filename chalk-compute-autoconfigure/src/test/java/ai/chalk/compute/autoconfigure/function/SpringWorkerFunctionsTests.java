package ai.chalk.compute.autoconfigure.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.function.FunctionPayloads;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.function.worker.FunctionBinding;
import ai.chalk.compute.function.worker.FunctionWorker;
import ai.chalk.compute.function.worker.WorkerSettings;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallServiceGrpc;
import ai.chalk.compute.sandbox.SandboxClient;
import com.acme.functions.WorkerApp;
import com.google.protobuf.ByteString;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;

/**
 * The {@code spring:} worker mode: the core worker finds it with {@code ServiceLoader}, boots the application as a
 * worker and serves its beans' functions on a real Unix socket.
 */
class SpringWorkerFunctionsTests {

    @TempDir
    Path dir;

    private WorkerSettings settings(String functions) {
        return WorkerSettings.fromEnv(Map.of(
                WorkerSettings.SOCKET,
                dir.resolve("worker.sock").toString(),
                WorkerSettings.FUNCTIONS,
                functions,
                WorkerSettings.MODE,
                "spring:" + WorkerApp.class.getName(),
                WorkerSettings.ID,
                "test-1"));
    }

    @Test
    void supportsTheSpringModeOnly() {
        SpringWorkerFunctions loader = new SpringWorkerFunctions();
        assertThat(loader.supports("spring:com.acme.App")).isTrue();
        assertThat(loader.supports("spring:")).isFalse();
        assertThat(loader.supports("plain")).isFalse();
    }

    @Test
    void theWorkerServesTheBeansFunctionsOnItsSocket() throws Exception {
        WorkerSettings settings =
                settings("greet=com.acme.functions.Fraud#greet,Embedder.embed=com.acme.functions.Embedder#embed");
        // the worker's application context stays open for the worker's life, as in a replica (closed at JVM exit)
        try (FunctionWorker worker = FunctionWorker.start(settings);
                Closeable channel = new Closeable(
                        Grpc.newChannelBuilder("unix:" + settings.socket(), InsecureChannelCredentials.create())
                                .build())) {
            FunctionRegistry registry = worker.registry();
            FunctionPayloads greet = registry.get("greet").payloads();
            FunctionPayloads embed = registry.get("Embedder.embed").payloads();
            List<CallFunctionResponse> responses = exchange(
                    channel.channel,
                    List.of(
                            request("greet", greet.encodeCall("Ada")),
                            request("Embedder.embed", embed.encodeCall("abcd"))));
            // the greeting comes from the application's Greeting bean: the function ran on the bean Spring made
            assertThat(greet.decodeResult(responses.get(0).getFeatherStream().toByteArray(), DecodeContext.empty()))
                    .isEqualTo("Welcome, Ada");
            assertThat(embed.decodeResult(responses.get(1).getFeatherStream().toByteArray(), DecodeContext.empty()))
                    .isEqualTo(List.of(4.0f));
        }
    }

    @Test
    void theApplicationBootsAsAWorkerWithoutWebServerEmbeddedServerOrClientMakingOnlyTheServedBeans() throws Exception {
        try (ConfigurableApplicationContext context = SpringWorkerFunctions.boot(
                WorkerApp.class.getName(), FunctionBinding.parseList("greet=com.acme.functions.Fraud#greet"))) {
            // the plain, non-web context SpringApplication makes for web-application-type=none
            assertThat(context.getClass()).isEqualTo(AnnotationConfigApplicationContext.class);
            assertThat(context.getBeanNamesForType(EmbeddedComputeServer.class)).isEmpty();
            assertThat(context.getBeanNamesForType(SandboxClient.class)).isEmpty();
            assertThat(context.getBean(ChalkComputeProperties.class)
                            .getFunctions()
                            .isWorker())
                    .isTrue();
            ChalkFunctions functions = context.getBean(ChalkFunctions.class);
            assertThat(functions.registry().get("greet").invoke("Bo")).isEqualTo("Welcome, Bo");
            // the bean of the function served, with its dependency; the other function bean is never made
            assertThat(functions.functions())
                    .extracting(FunctionDeploymentState::name)
                    .containsExactlyInAnyOrder("greet", "fraudScore", "exact");
            assertThat(context.getBeanFactory().containsSingleton("greeting")).isTrue();
            assertThat(context.getBeanFactory().containsSingleton("embedder")).isFalse();
        }
    }

    @Test
    void aWorkerGivenATargetStillHasItsClient() throws Exception {
        // the application's own configuration names a server: the worker's beans may use a SandboxClient
        System.setProperty("chalk.compute.target", "127.0.0.1:1");
        try (ConfigurableApplicationContext context = SpringWorkerFunctions.boot(
                WorkerApp.class.getName(), FunctionBinding.parseList("greet=com.acme.functions.Fraud#greet"))) {
            assertThat(context.getBeanNamesForType(SandboxClient.class)).hasSize(1);
            assertThat(context.getBeanNamesForType(EmbeddedComputeServer.class)).isEmpty();
        } finally {
            System.clearProperty("chalk.compute.target");
        }
    }

    @Test
    void aFunctionTheApplicationDoesNotDeclareStopsTheWorkerNamingWhatItHas() {
        assertThatThrownBy(() -> new SpringWorkerFunctions().load(settings("missing=com.acme.functions.Fraud#missing")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("missing=com.acme.functions.Fraud#missing")
                .hasMessageContaining("no bean of com.acme.functions.WorkerApp declares it")
                .hasMessageContaining("the beans of the classes named declare")
                .hasMessageContaining("greet");
    }

    @Test
    void aNameBoundToAnotherMethodStopsTheWorker() {
        assertThatThrownBy(() -> new SpringWorkerFunctions().load(settings("greet=com.acme.functions.Fraud#score")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'greet' is com.acme.functions.Fraud.greet(String name)");
    }

    private static CallFunctionRequest request(String name, byte[] payload) {
        return CallFunctionRequest.newBuilder()
                .setName(name)
                .setFeatherStream(ByteString.copyFrom(payload))
                .build();
    }

    private static List<CallFunctionResponse> exchange(ManagedChannel channel, List<CallFunctionRequest> requests)
            throws Exception {
        List<CallFunctionResponse> received = new ArrayList<>();
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
        return done.get(60, TimeUnit.SECONDS);
    }

    /** A channel shut down at the end of a try block. */
    private record Closeable(ManagedChannel channel) implements AutoCloseable {
        @Override
        public void close() throws InterruptedException {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
