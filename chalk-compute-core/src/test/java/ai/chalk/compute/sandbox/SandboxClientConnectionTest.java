package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.dataset.DatasetClient;
import ai.chalk.compute.error.ServerUnavailableException;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.SelfSignedCertificate;
import ai.chalk.compute.server.auth.Authentication;
import ai.chalk.compute.sql.SQLClient;
import ai.chalk.compute.sql.SqlJob;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How clients connect over TCP: plaintext, TLS with a trusted certificate, bearer tokens, environment. */
class SandboxClientConnectionTest {

    private static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    private final List<String> authorizations = new CopyOnWriteArrayList<>();

    @TempDir
    Path dataDir;

    @Test
    void plaintextWithBearerToken() throws Exception {
        try (ComputeServer server = start(null, null);
                SandboxClient client = SandboxClient.builder()
                        .target("localhost:" + server.port().orElseThrow())
                        .bearerToken("tok-123")
                        .build()) {
            assertThat(client.create().exec("cat").success()).isTrue();
            assertThat(authorizations).isNotEmpty().allMatch("Bearer tok-123"::equals);
        }
    }

    @Test
    void tlsWithATrustedCertificate(@TempDir Path dir) throws Exception {
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        SelfSignedCertificate.write(dir, cert, key);

        try (ComputeServer server = start(cert, key)) {
            int port = server.port().orElseThrow();
            try (SandboxClient client = SandboxClient.builder()
                    .target("https://localhost:" + port)
                    .trustCertificates(cert)
                    .bearerToken("secret")
                    .build()) {
                assertThat(client.create().exec("echo", "over tls").stdoutText())
                        .isEqualTo("over tls\n");
                assertThat(authorizations).isNotEmpty().containsOnly("Bearer secret");

                // the signed links (dataset files, SQL result shards) go over TLS too, trusted as the gRPC port is
                assertThat(server.httpUrl()).startsWith("https://");
                Path csv = dir.resolve("rows.csv");
                Files.writeString(csv, "question,answer\nhi,hello\n");
                DatasetClient datasets = client.datasets();
                String revision = datasets.upload("over_tls", csv).revisionId();
                List<Path> back = datasets.download(revision, dir.resolve("back"));
                assertThat(back)
                        .singleElement()
                        .satisfies(f -> assertThat(f).isNotEmptyFile().hasFileName("part-00000.parquet"));
                try (SQLClient sql = SQLClient.of(client)) {
                    SqlJob job = sql.submit("SELECT answer FROM chalk.datasets.over_tls", "batch");
                    assertThat(job.await(Duration.ofMinutes(1)).download(dir.resolve("shards")))
                            .isNotEmpty();
                }
                // over plain HTTP, the port answers nothing a client can use
                HttpClient plain = HttpClient.newHttpClient();
                String http = server.httpUrl().replace("https://", "http://");
                assertThatThrownBy(() -> plain.send(
                                HttpRequest.newBuilder(URI.create(http + "/.well-known/jwks.json"))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString()))
                        .isInstanceOf(java.io.IOException.class);
            }
            // a client that does not trust the certificate does not follow the links either
            try (SandboxClient untrustingLinks = SandboxClient.builder()
                    .target("https://localhost:" + port)
                    .trustCertificates(cert)
                    .build()) {
                DatasetClient viaChannel = DatasetClient.of(untrustingLinks.channel()); // the system's trust only
                String revision = untrustingLinks.datasets().list().get(0).revisionId();
                assertThatThrownBy(() -> viaChannel.download(revision, dir.resolve("refused")))
                        .hasMessageContaining("PKIX");
            }
            // the system trust store does not know this self-signed certificate
            try (SandboxClient untrusting = SandboxClient.connect("https://localhost:" + port)) {
                assertThatThrownBy(untrusting::create).isInstanceOf(ServerUnavailableException.class);
            }
            // plaintext against a TLS port fails too, as unavailable
            try (SandboxClient plaintext = SandboxClient.builder()
                    .target("https://localhost:" + port)
                    .useTls(false)
                    .build()) {
                assertThatThrownBy(plaintext::create).isInstanceOf(ServerUnavailableException.class);
            }
        }
    }

    @Test
    void fromEnvConnectsToTheComputeTarget() throws Exception {
        try (ComputeServer server = start(null, null);
                SandboxClient client = SandboxClient.fromEnv(Map.of(
                        "CHALK_COMPUTE_TARGET", "localhost:" + server.port().orElseThrow()))) {
            assertThat(client.create().info().isRunning()).isTrue();
        }
    }

    @Test
    void credentialsFromATokenFileAuthenticateEveryCall(@TempDir Path dir) throws Exception {
        Path tokenFile = dir.resolve("identity-token");
        String jwt = new com.nimbusds.jwt.PlainJWT(new com.nimbusds.jwt.JWTClaimsSet.Builder()
                        .subject("workload")
                        .claim("environment_id", "env-7")
                        .expirationTime(new java.util.Date(System.currentTimeMillis() + 3_600_000))
                        .build())
                .serialize();
        java.nio.file.Files.writeString(tokenFile, jwt);
        try (ComputeServer server = start(null, null)) {
            String target = "localhost:" + server.port().orElseThrow();
            try (SandboxClient client = SandboxClient.builder()
                    .target(target)
                    .credentials(ai.chalk.compute.auth.ChalkCredentials.ofTokenFile(tokenFile))
                    .build()) {
                assertThat(client.create().exec("true").success()).isTrue();
            }
            assertThat(authorizations).isNotEmpty().containsOnly("Bearer " + jwt);
            authorizations.clear();
            try (SandboxClient client = SandboxClient.fromEnv(
                    Map.of("CHALK_COMPUTE_TARGET", target, "CHALK_WEB_IDENTITY_TOKEN_FILE", tokenFile.toString()))) {
                client.list();
            }
            assertThat(authorizations).containsOnly("Bearer " + jwt);
        }
    }

    @Test
    void nobodyListeningIsUnavailable() {
        try (SandboxClient client = SandboxClient.connect("localhost:1")) {
            assertThatThrownBy(client::list).isInstanceOf(ServerUnavailableException.class);
        }
    }

    @Test
    void closedClientRefusesCalls() {
        SandboxClient client = SandboxClient.connect("localhost:1");
        client.close();
        client.close();
        assertThatThrownBy(client::list)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    /** A real server on a loopback port, TLS when a certificate is given, recording authorization headers. */
    private ComputeServer start(Path cert, Path key) throws Exception {
        ServerInterceptor capture = new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(
                    ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
                String value = headers.get(AUTHORIZATION);
                if (value != null) {
                    authorizations.add(value);
                }
                return next.startCall(call, headers);
            }
        };
        ComputeServer.Builder builder = ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .auth(Authentication.Mode.NONE)
                .interceptors(capture);
        if (cert != null) {
            builder.tls(cert, key);
        }
        return builder.build().start();
    }
}
