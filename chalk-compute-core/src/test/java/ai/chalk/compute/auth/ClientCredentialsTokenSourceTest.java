package ai.chalk.compute.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import ai.chalk.compute.error.AuthenticationException;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.ServerUnavailableException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Client credentials against a real {@code AuthService} and a real protected service over loopback TCP. */
class ClientCredentialsTokenSourceTest {

    private static final String CLIENT_ID = "client-a";
    private static final String SECRET = "s3cr3t-client-secret-value";

    private final MutableClock clock = MutableClock.startingNow();
    private AuthTestServer server;

    @BeforeEach
    void start() {
        server = new AuthTestServer(new RecordingAuthService(clock, CLIENT_ID, SECRET));
    }

    @AfterEach
    void stop() throws InterruptedException {
        server.close();
    }

    private ClientCredentialsTokenSource.Builder source() {
        return ClientCredentialsTokenSource.builder()
                .clientId(CLIENT_ID)
                .clientSecret(SECRET)
                .apiServer(server.apiServer())
                .clock(clock);
    }

    @Test
    void exchangesOnceReusesTheTokenAndRefreshesShortlyBeforeExpiry() {
        try (LogCapture logs = new LogCapture();
                TokenSource tokens = source().build()) {
            ChalkAuthInterceptor interceptor = new ChalkAuthInterceptor(tokens);
            assertThat(server.auth.calls())
                    .as("nothing is fetched at construction")
                    .isZero();

            for (int i = 0; i < 3; i++) {
                assertThat(server.check(interceptor)).isEqualTo(ServingStatus.SERVING);
            }
            assertThat(server.auth.calls()).isEqualTo(1);
            assertThat(server.auth.requests().get(0).getGrantType()).isEqualTo("client_credentials");
            assertThat(server.auth.requests().get(0).getClientId()).isEqualTo(CLIENT_ID);
            assertThat(server.auth.requests().get(0).getClientSecret()).isEqualTo(SECRET);
            assertThat(server.recorder.seen()).hasSize(3).allSatisfy(seen -> {
                assertThat(seen.method()).isEqualTo("grpc.health.v1.Health/Check");
                assertThat(seen.authorization()).isEqualTo("Bearer token-1");
                assertThat(seen.environment()).isEqualTo("env-primary");
            });

            // the token lives 10 minutes and is refreshed one minute before it expires
            clock.advance(Duration.ofMinutes(8).plusSeconds(59));
            server.check(interceptor);
            assertThat(server.auth.calls()).isEqualTo(1);
            assertThat(server.recorder.last().authorization()).isEqualTo("Bearer token-1");

            clock.advance(Duration.ofSeconds(2));
            server.check(interceptor);
            assertThat(server.auth.calls()).isEqualTo(2);
            assertThat(server.recorder.last().authorization()).isEqualTo("Bearer token-2");
            assertThat(tokens.token().expiresAt()).contains(clock.instant().plus(Duration.ofMinutes(10)));

            assertThat(logs.all())
                    .doesNotContain(SECRET)
                    .doesNotContain("token-1")
                    .doesNotContain("token-2");
        }
    }

    @Test
    void usesExpiresInWhenTheResponseHasNoExpiresAt() {
        server.auth.onlyExpiresIn().lifetime(Duration.ofMinutes(2));
        try (TokenSource tokens = source().build()) {
            assertThat(tokens.token().value()).isEqualTo("token-1");
            clock.advance(Duration.ofSeconds(59));
            assertThat(tokens.token().value()).isEqualTo("token-1");
            clock.advance(Duration.ofSeconds(2));
            assertThat(tokens.token().value()).isEqualTo("token-2");
        }
    }

    @Test
    void aShortLivedTokenIsRefreshedAtHalfItsLifetimeAtTheLatest() {
        server.auth.lifetime(Duration.ofSeconds(40));
        try (TokenSource tokens = source().build()) {
            assertThat(tokens.token().value()).isEqualTo("token-1");
            clock.advance(Duration.ofSeconds(19));
            assertThat(tokens.token().value()).isEqualTo("token-1");
            clock.advance(Duration.ofSeconds(2));
            assertThat(tokens.token().value()).isEqualTo("token-2");
        }
    }

    @Test
    void anExplicitEnvironmentWinsOverThePrimaryEnvironment() {
        try (TokenSource tokens = source().environment("env-explicit").build()) {
            server.check(new ChalkAuthInterceptor(tokens));
            assertThat(server.recorder.last().environment()).isEqualTo("env-explicit");
        }
    }

    @Test
    void withoutAnyEnvironmentNoEnvironmentHeaderIsSent() {
        server.auth.primaryEnvironment(null);
        try (TokenSource tokens = source().build()) {
            server.check(new ChalkAuthInterceptor(tokens));
            assertThat(server.recorder.last().authorization()).isEqualTo("Bearer token-1");
            assertThat(server.recorder.last().environment()).isNull();
            assertThat(tokens.token().environment()).isEmpty();
        }
    }

    @Test
    void concurrentCallersShareOneExchange() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try (TokenSource tokens = source().build()) {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<AccessToken>> results = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                results.add(pool.submit(() -> {
                    go.await();
                    return tokens.token();
                }));
            }
            go.countDown();
            for (Future<AccessToken> result : results) {
                assertThat(result.get(10, TimeUnit.SECONDS).value()).isEqualTo("token-1");
            }
            assertThat(server.auth.calls()).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aTokenTheServerRejectsIsExchangedAgainOnTheNextCall() {
        try (TokenSource tokens = source().build()) {
            ChalkAuthInterceptor interceptor = new ChalkAuthInterceptor(tokens);
            server.recorder.revoke("token-1");

            Throwable rejected = catchThrowable(() -> server.check(interceptor));
            assertThat(rejected).isInstanceOf(StatusRuntimeException.class);
            assertThat(((StatusRuntimeException) rejected).getStatus().getCode())
                    .isEqualTo(Status.Code.UNAUTHENTICATED);

            assertThat(server.check(interceptor)).isEqualTo(ServingStatus.SERVING);
            assertThat(server.auth.calls()).isEqualTo(2);
            assertThat(server.recorder.last().authorization()).isEqualTo("Bearer token-2");
        }
    }

    @Test
    void aRejectedSecretFailsTheCallWithoutRevealingTheSecret() {
        try (LogCapture logs = new LogCapture();
                TokenSource tokens = ClientCredentialsTokenSource.builder()
                        .clientId(CLIENT_ID)
                        .clientSecret("wrong-" + SECRET)
                        .apiServer(server.apiServer())
                        .clock(clock)
                        .build()) {
            // the source itself
            Throwable direct = catchThrowable(tokens::token);
            assertThat(direct).isInstanceOf(AuthenticationException.class);
            assertThat(((AuthenticationException) direct).statusCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
            assertThat(direct.getMessage()).contains(CLIENT_ID).contains("invalid client secret");
            assertNoSecretAnywhere(direct);

            // a call through the interceptor: the protected service is never reached
            Throwable viaCall = catchThrowable(() -> server.check(new ChalkAuthInterceptor(tokens)));
            assertThat(viaCall).isInstanceOf(StatusRuntimeException.class);
            assertThat(((StatusRuntimeException) viaCall).getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
            assertNoSecretAnywhere(viaCall);
            ChalkComputeException translated = ChalkComputeException.from(viaCall);
            assertThat(translated).isInstanceOf(AuthenticationException.class);
            assertThat(translated.getMessage()).contains(CLIENT_ID).doesNotContain(SECRET);
            assertThat(server.recorder.seen()).isEmpty();

            assertThat(tokens.toString()).contains(CLIENT_ID).doesNotContain(SECRET);
            assertThat(logs.all()).doesNotContain(SECRET);
        }
    }

    @Test
    void whileARefreshFailsTheCurrentTokenIsUsedUntilItExpires() {
        try (TokenSource tokens = source().build()) {
            assertThat(tokens.token().value()).isEqualTo("token-1");
            server.auth.failWith(Status.UNAVAILABLE.withDescription("auth backend down"));

            clock.advance(Duration.ofMinutes(9).plusSeconds(30));
            assertThat(tokens.token().value()).isEqualTo("token-1");
            assertThat(server.auth.calls()).isEqualTo(2);
            assertThat(tokens.token().value()).as("no retry storm").isEqualTo("token-1");
            assertThat(server.auth.calls()).isEqualTo(2);

            clock.advance(Duration.ofSeconds(31));
            assertThatThrownBy(tokens::token)
                    .isInstanceOf(ServerUnavailableException.class)
                    .hasMessageContaining("auth backend down");

            server.auth.failWith(null);
            assertThat(tokens.token().value()).isEqualTo("token-4");
        }
    }

    @Test
    void anUnreachableApiServerIsReportedAsUnavailable() throws IOException {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        try (TokenSource tokens = ClientCredentialsTokenSource.builder()
                .clientId(CLIENT_ID)
                .clientSecret(SECRET)
                .apiServer("127.0.0.1:" + closedPort)
                .timeout(Duration.ofSeconds(5))
                .build()) {
            Throwable failure = catchThrowable(tokens::token);
            assertThat(failure)
                    .isInstanceOf(ServerUnavailableException.class)
                    .hasMessageContaining("127.0.0.1:" + closedPort);
            assertNoSecretAnywhere(failure);
        }
    }

    @Test
    void aSourceGivenAChannelLeavesItOpen() {
        try (TokenSource tokens = ClientCredentialsTokenSource.builder()
                .clientId(CLIENT_ID)
                .clientSecret(SECRET)
                .channel(server.channel())
                .clock(clock)
                .build()) {
            assertThat(tokens.token().value()).isEqualTo("token-1");
        }
        assertThat(server.channel().isShutdown()).isFalse();
        assertThat(server.check(new ChalkAuthInterceptor(ClientCredentialsTokenSource.builder()
                        .clientId(CLIENT_ID)
                        .clientSecret(SECRET)
                        .channel(server.channel())
                        .build())))
                .isEqualTo(ServingStatus.SERVING);
    }

    private static void assertNoSecretAnywhere(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            assertThat(String.valueOf(t.getMessage())).doesNotContain(SECRET);
            assertThat(t.toString()).doesNotContain(SECRET);
        }
    }

    /**
     * The client secret lasts until it is rotated, unlike the tokens it is exchanged for: sent in the clear to another
     * host, as an {@code http://} API server makes it, it went without a word, while a token sent so was warned about.
     */
    @Test
    void aSecretExchangedWithoutTlsWithAnotherHostIsWarnedAboutAndNeverLogged() {
        try (LogCapture logs = new LogCapture()) {
            for (String server : List.of("http://localhost:1", "http://127.0.0.1:1", "https://api.example.com")) {
                ClientCredentialsTokenSource.builder()
                        .apiServer(server)
                        .clientId("client-a")
                        .clientSecret("secret-never-logged")
                        .build()
                        .close();
            }
            assertThat(logs.lines()).noneMatch(l -> l.contains("without TLS"));
            for (String remote : List.of("http://api.example.com:8080", "http://127.attacker.example:8080")) {
                ClientCredentialsTokenSource.builder()
                        .apiServer(remote)
                        .clientId("client-a")
                        .clientSecret("secret-never-logged")
                        .build()
                        .close();
                String host = remote.substring("http://".length());
                assertThat(logs.lines())
                        .as("a name that only starts like a loopback address is another host")
                        .anyMatch(l -> l.startsWith("WARN")
                                && l.contains("without TLS")
                                && l.contains(host)
                                && l.contains("client-a"));
            }
            assertThat(logs.all()).doesNotContain("secret-never-logged");
        }
    }
}
