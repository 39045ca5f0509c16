package ai.chalk.compute.server.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetTokenRequest;
import ai.chalk.compute.proto.server.v1.GetTokenResponse;
import ai.chalk.compute.proto.server.v1.GetWorkloadIdentityTokenRequest;
import ai.chalk.compute.proto.server.v1.GetWorkloadIdentityTokenResponse;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.RunningServer;
import com.auth0.jwt.JWT;
import com.auth0.jwt.algorithms.Algorithm;
import com.auth0.jwt.interfaces.DecodedJWT;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.JWKSet;
import io.grpc.Attributes;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.interfaces.ECPublicKey;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server over TCP with authentication on, as an independent client meets it: calls without a token, with a bad,
 * expired or foreign token, from a revoked credential, or naming another environment are refused with a status and a
 * message that say what to do; a client-credentials exchange then works; identity tokens verify against the JWKS with
 * another JWT library than the server's.
 */
class AuthenticationTest {

    @TempDir
    static Path dataDir;

    static ComputeServer server;
    static ManagedChannel anonymous;

    @BeforeAll
    static void start() throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).port(0).build().start();
        anonymous = NettyChannelBuilder.forAddress("127.0.0.1", server.port().orElseThrow())
                .usePlaintext()
                .build();
    }

    @AfterAll
    static void stop() throws Exception {
        anonymous.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.close();
    }

    private static ManagedChannel withToken(String token) {
        return NettyChannelBuilder.forAddress("127.0.0.1", server.port().orElseThrow())
                .usePlaintext()
                .intercept(RunningServer.bearer(new AtomicReference<>(token)))
                .build();
    }

    private static Status listSandboxes(ManagedChannel channel) {
        try {
            SandboxServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(30, TimeUnit.SECONDS)
                    .listSandboxes(ListSandboxesRequest.getDefaultInstance());
            return Status.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus();
        }
    }

    private static GetTokenResponse getToken(String id, String secret) {
        return getToken(anonymous, id, secret);
    }

    private static GetTokenResponse getToken(ManagedChannel channel, String id, String secret) {
        return AuthServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .getToken(GetTokenRequest.newBuilder()
                        .setClientId(id)
                        .setClientSecret(secret)
                        .setGrantType("client_credentials")
                        .build());
    }

    @Test
    void theFirstStartWritesACredentialOnlyItsOwnerCanRead() throws Exception {
        Path file = dataDir.resolve("credentials.yml");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
                .isEqualTo("rw-------");
        String yml = Files.readString(file);
        assertThat(yml)
                .contains(
                        "tokens:",
                        "clientId: \"client-",
                        "clientSecret: \"secret-",
                        "apiServer: \"" + server.grpcUrl().orElseThrow() + "\"",
                        "activeEnvironment: \"default\"");
        assertThat(server.authentication().credentials().list())
                .extracting(ClientCredentials.Credential::name)
                .contains("admin");
        assertThat(Files.readString(dataDir.resolve("auth").resolve("clients.json")))
                .as("secrets are stored hashed")
                .doesNotContain(yml.replaceAll("(?s).*clientSecret: \"([^\"]+)\".*", "$1"));
    }

    @Test
    void aCallWithoutATokenSaysWhereTheCredentialsAre() {
        Status status = listSandboxes(anonymous);
        assertThat(status.getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
        assertThat(status.getDescription())
                .contains("requires an access token")
                .contains(dataDir.resolve("credentials.yml").toString());
        // health needs none
        assertThat(HealthGrpc.newBlockingStub(anonymous)
                        .check(HealthCheckRequest.getDefaultInstance())
                        .getStatus())
                .hasToString("SERVING");
    }

    @Test
    void garbageForeignAndExpiredTokensAreRefusedSayingWhy() throws Exception {
        ManagedChannel garbage = withToken("not-a-token");
        assertThat(listSandboxes(garbage).getDescription()).contains("not a JWT");
        garbage.shutdownNow();

        // a token of another server (its own keys) is not this server's
        Path otherDir = Files.createTempDirectory(dataDir, "other");
        ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor();
        try {
            Authentication other = Authentication.open(Authentication.Mode.TOKENS, otherDir, Clock.systemUTC(), timers);
            String foreign = other.tokens()
                    .access(
                            new Caller("default", "client:x", Caller.Kind.CLIENT),
                            Optional.empty(),
                            Duration.ofMinutes(5))
                    .token();
            ManagedChannel channel = withToken(foreign);
            Status status = listSandboxes(channel);
            assertThat(status.getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
            assertThat(status.getDescription()).contains("not issued by this server");
            channel.shutdownNow();

            // this server's keys, but issued two hours ago for one hour
            Authentication past = Authentication.open(
                    Authentication.Mode.TOKENS, dataDir, Clock.offset(Clock.systemUTC(), Duration.ofHours(-2)), timers);
            ClientCredentials.Created c = server.authentication().credentials().create("expiring", "default");
            String expired = past.tokens()
                    .access(
                            new Caller("default", "client:" + c.credential().id(), Caller.Kind.CLIENT),
                            Optional.of(c.credential().id()),
                            Duration.ofHours(1))
                    .token();
            channel = withToken(expired);
            status = listSandboxes(channel);
            assertThat(status.getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
            assertThat(status.getDescription()).contains("expired at").contains("client credentials");
            channel.shutdownNow();
        } finally {
            timers.shutdownNow();
        }
    }

    @Test
    void anExchangedTokenWorksUntilItsCredentialIsRevoked() {
        ClientCredentials.Created c = server.authentication().credentials().create("ci", "default");
        GetTokenResponse token = getToken(c.credential().id(), c.secret());
        assertThat(token.getTokenType()).isEqualTo("Bearer");
        assertThat(token.getPrimaryEnvironment()).isEqualTo("default");
        assertThat(token.getExpiresIn()).isEqualTo(3600);
        assertThat(token.getApiServer()).isEqualTo(server.grpcUrl().orElseThrow());
        ManagedChannel channel = withToken(token.getAccessToken());
        assertThat(listSandboxes(channel).getCode()).isEqualTo(Status.Code.OK);

        assertThat(server.authentication().credentials().revoke(c.credential().id()))
                .isTrue();
        Status status = listSandboxes(channel);
        assertThat(status.getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
        assertThat(status.getDescription()).contains("revoked");
        assertThatThrownBy(() -> getToken(c.credential().id(), c.secret()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED));
        channel.shutdownNow();
    }

    @Test
    void aTokenActsOnlyInItsEnvironment() {
        ClientCredentials.Created dev = server.authentication().credentials().create("dev", "dev");
        ManagedChannel channel =
                withToken(getToken(dev.credential().id(), dev.secret()).getAccessToken());
        Metadata prod = new Metadata();
        prod.put(TrustedCallers.ENVIRONMENT_HEADER, "prod");
        assertThatThrownBy(() -> SandboxServiceGrpc.newBlockingStub(channel)
                        .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(prod))
                        .listSandboxes(ListSandboxesRequest.getDefaultInstance()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
                    assertThat(e.getStatus().getDescription())
                            .contains("environment dev")
                            .contains("prod");
                });
        channel.shutdownNow();
    }

    @Test
    void wrongSecretsAreRefusedAndAPeerThatKeepsGuessingIsSlowedDownWhicheverLoopbackAddressItTakes() throws Exception {
        ClientCredentials.Created c = server.authentication().credentials().create("guessed", "default");
        long slowest = 0;
        for (int i = 0; i < FailedAttempts.FREE + 2; i++) {
            // each guess from another address of 127.0.0.0/8, which any local user may bind: all are this host
            ManagedChannel guesser = fromLoopbackAddress("127.0.0." + (10 + i));
            try {
                long t0 = System.nanoTime();
                assertThatThrownBy(() -> getToken(guesser, c.credential().id(), "secret-wrong"))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
                            assertThat(e.getStatus().getDescription())
                                    .contains("not valid")
                                    .doesNotContain("secret-wrong");
                        });
                slowest = Math.max(slowest, System.nanoTime() - t0);
            } finally {
                guesser.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
        assertThat(Duration.ofNanos(slowest))
                .as("the answers after %d failures wait", FailedAttempts.FREE)
                .isGreaterThanOrEqualTo(Duration.ofMillis(400));
    }

    /** A channel to the server whose connections come from {@code source}, a loopback address. */
    private static ManagedChannel fromLoopbackAddress(String source) {
        return NettyChannelBuilder.forAddress("127.0.0.1", server.port().orElseThrow())
                .usePlaintext()
                .localSocketPicker(new NettyChannelBuilder.LocalSocketPicker() {
                    @Override
                    public SocketAddress createSocketAddress(SocketAddress remote, Attributes attributes) {
                        return new InetSocketAddress(source, 0);
                    }
                })
                .build();
    }

    @Test
    void identityTokensVerifyAgainstTheJwksWithAnotherJwtLibrary() throws Exception {
        ClientCredentials.Created c = server.authentication().credentials().create("workload", "dev");
        ManagedChannel channel =
                withToken(getToken(c.credential().id(), c.secret()).getAccessToken());
        GetWorkloadIdentityTokenResponse identity = AuthServiceGrpc.newBlockingStub(channel)
                .getWorkloadIdentityToken(GetWorkloadIdentityTokenRequest.newBuilder()
                        .setAudience("https://vault.example.com")
                        .build());
        channel.shutdownNow();
        assertThat(identity.getIssuer()).isEqualTo(server.httpUrl());
        assertThat(identity.getSubject()).isEqualTo("client:" + c.credential().id());

        HttpClient http = HttpClient.newHttpClient();
        String discovery = http.send(
                        HttpRequest.newBuilder(URI.create(server.httpUrl() + "/.well-known/openid-configuration"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
        assertThat(discovery).contains("\"jwks_uri\":\"" + server.httpUrl() + "/.well-known/jwks.json\"");
        HttpResponse<String> jwks = http.send(
                HttpRequest.newBuilder(URI.create(server.httpUrl() + "/.well-known/jwks.json"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(jwks.statusCode()).isEqualTo(200);
        assertThat(jwks.body()).doesNotContain("\"d\"").as("only public halves are published");

        DecodedJWT decoded = JWT.decode(identity.getToken());
        ECPublicKey key = ((ECKey) JWKSet.parse(jwks.body()).getKeyByKeyId(decoded.getKeyId())).toECPublicKey();
        DecodedJWT verified = JWT.require(Algorithm.ECDSA256(key, null))
                .withIssuer(server.httpUrl())
                .withAudience("https://vault.example.com")
                .withSubject("client:" + c.credential().id())
                .build()
                .verify(identity.getToken());
        assertThat(verified.getClaim("env").asString()).isEqualTo("dev");
        assertThat(verified.getExpiresAtAsInstant()).isBefore(Instant.now().plus(Duration.ofMinutes(11)));
        // an identity token is not an access token
        ManagedChannel misuse = withToken(identity.getToken());
        assertThat(listSandboxes(misuse).getDescription()).contains("not an access token");
        misuse.shutdownNow();
    }
}
