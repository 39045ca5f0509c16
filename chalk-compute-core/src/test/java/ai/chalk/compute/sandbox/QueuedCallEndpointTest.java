package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.auth.ClientCredentialsTokenSource;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.deploy.WorkerMode;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.ClientCredentials;
import com.acme.Tally;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where queued function calls go, against a real server over TCP with authentication on: the engine
 * {@code CHALK_GRPC_ENGINE} names, else the one {@code TeamService.GetEnv} describes, asked again only when the
 * identity's token is refreshed; an in-process client queues on its own channel.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class QueuedCallEndpointTest {

    private ComputeServer server;
    private ClientCredentials.Created credential;
    private String target;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).port(0).build().start();
        credential = server.authentication().credentials().create("queue", "default");
        target = "localhost:" + server.port().orElseThrow();
        try (SandboxClient client = SandboxClient.inProcess(server.inProcessName());
                CodeSnapshot code = CodeSnapshot.ofClassPath()) {
            FunctionRegistry registry = new FunctionRegistry();
            registry.register(Tally.class);
            client.functions().deploy(registry.get("sum").definition(), code, WorkerMode.PLAIN, false);
        }
    }

    @AfterAll
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private Map<String, String> env(String... more) {
        Map<String, String> env = new java.util.HashMap<>(Map.of(
                "CHALK_COMPUTE_TARGET", target,
                "CHALK_CLIENT_ID", credential.credential().id(),
                "CHALK_CLIENT_SECRET", credential.secret()));
        for (int i = 0; i < more.length; i += 2) {
            env.put(more[i], more[i + 1]);
        }
        return env;
    }

    @Test
    void withCredentialsQueuedCallsGoToTheEngineTheEnvironmentDescribes() throws Exception {
        try (SandboxClient client = SandboxClient.fromEnv(env())) {
            assertThat(client.queuedCallTarget())
                    .as("GetEnv's grpc_engine_url, not the configured localhost address")
                    .isEqualTo("127.0.0.1:" + server.port().orElseThrow());
            RemoteFunction sum = RemoteFunction.fromName(client, "sum");
            assertThat(sum.callAsync(20L, 22L).get(60, TimeUnit.SECONDS)).isEqualTo(42L);
        }
    }

    @Test
    void chalkGrpcEngineWinsOverDiscovery() throws Exception {
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        try (SandboxClient client = SandboxClient.fromEnv(env("CHALK_GRPC_ENGINE", "127.0.0.1:" + closed))) {
            assertThat(client.queuedCallTarget()).isEqualTo("127.0.0.1:" + closed);
            RemoteFunction sum = RemoteFunction.fromName(client, "sum");
            assertThat(sum.call(1L, 2L))
                    .as("direct calls still go to the target")
                    .isEqualTo(3L);
            assertThat(sum.callAsync(1L, 2L))
                    .failsWithin(30, TimeUnit.SECONDS)
                    .withThrowableOfType(ExecutionException.class)
                    .havingCause()
                    .isInstanceOfSatisfying(
                            ChalkComputeException.class,
                            e -> assertThat(e.statusCode()).isEqualTo(Status.Code.UNAVAILABLE));
        }
    }

    @Test
    void theEngineIsAskedAgainOnlyWhenTheIdentityIsRefreshed() {
        AtomicInteger getEnv = new AtomicInteger();
        ClientInterceptor counting = new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(
                    MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                if (method.getFullMethodName().equals("chalk.server.v1.TeamService/GetEnv")) {
                    getEnv.incrementAndGet();
                }
                return next.newCall(method, options);
            }
        };
        ManagedChannel raw =
                io.grpc.ManagedChannelBuilder.forTarget(target).usePlaintext().build();
        try (ClientCredentialsTokenSource tokens = ClientCredentialsTokenSource.builder()
                        .clientId(credential.credential().id())
                        .clientSecret(credential.secret())
                        .apiServer("http://" + target)
                        .build();
                QueuedCallEndpoint endpoint = QueuedCallEndpoint.fromEnv(
                        Map.of(),
                        ClientInterceptors.intercept(
                                raw, new ai.chalk.compute.auth.ChalkAuthInterceptor(tokens), counting),
                        ai.chalk.compute.connection.ConnectionSettings.forTarget(target),
                        tokens)) {
            endpoint.channel();
            endpoint.channel();
            assertThat(endpoint.target()).isEqualTo("127.0.0.1:" + server.port().orElseThrow());
            assertThat(getEnv).as("cached while the token stays").hasValue(1);

            tokens.invalidate(tokens.token());
            endpoint.channel();
            assertThat(getEnv).as("a refreshed identity asks again").hasValue(2);
        } finally {
            raw.shutdownNow();
        }
    }

    /**
     * A metadata API (or whoever answers in its place) naming a plaintext engine must not get the token of a client
     * that reached it over TLS sent in the clear.
     */
    @Test
    void aServerReachedOverTlsCannotDowngradeTheEngineToPlaintext() {
        assertThatThrownBy(() -> QueuedCallEndpoint.discoveredEngine("http://engine.example:80", true))
                .isInstanceOf(ai.chalk.compute.error.FailedPreconditionException.class)
                .hasMessageContaining("CHALK_GRPC_ENGINE");
        assertThat(QueuedCallEndpoint.discoveredEngine("engine.example:443", true)
                        .useTls())
                .as("host:port inherits the server's TLS")
                .isTrue();
        assertThat(QueuedCallEndpoint.discoveredEngine("https://engine.example", true)
                        .useTls())
                .isTrue();
        assertThat(QueuedCallEndpoint.discoveredEngine("http://127.0.0.1:50051", false)
                        .useTls())
                .as("a plaintext server's engine as described")
                .isFalse();
    }

    @Test
    void anInProcessClientQueuesOnItsOwnChannel() throws Exception {
        try (SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            assertThat(client.queuedCallChannel()).isSameAs(client.channel());
            assertThat(RemoteFunction.fromName(client, "sum").callAsync(2L, 2L).get(60, TimeUnit.SECONDS))
                    .isEqualTo(4L);
        }
    }
}
