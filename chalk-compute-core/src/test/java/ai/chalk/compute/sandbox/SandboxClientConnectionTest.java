package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.ServerUnavailableException;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerCredentials;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.TlsServerCredentials;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How clients connect over TCP: plaintext, TLS with a trusted certificate, bearer tokens, environment. */
class SandboxClientConnectionTest {

    private static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    private final List<String> authorizations = new CopyOnWriteArrayList<>();

    @Test
    void plaintextWithBearerToken() throws Exception {
        Server server = start(InsecureServerCredentials.create());
        try (SandboxClient client = SandboxClient.builder().target("localhost:" + server.getPort())
                .bearerToken("tok-123").build()) {
            assertThat(client.create().exec("cat").success()).isTrue();
            assertThat(authorizations).isNotEmpty().allMatch("Bearer tok-123"::equals);
        } finally {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void tlsWithATrustedCertificate(@TempDir Path dir) throws Exception {
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        Process openssl = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                "-keyout", key.toString(), "-out", cert.toString(), "-days", "1", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1")
                .redirectErrorStream(true).redirectOutput(dir.resolve("openssl.log").toFile()).start();
        assertThat(openssl.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(openssl.exitValue()).isZero();

        Server server = start(TlsServerCredentials.create(cert.toFile(), key.toFile()));
        try {
            try (SandboxClient client = SandboxClient.builder().target("https://localhost:" + server.getPort())
                    .trustCertificates(cert).bearerToken("secret").build()) {
                assertThat(client.create().info().id()).isEqualTo("scripted");
                assertThat(authorizations).containsOnly("Bearer secret");
            }
            // the system trust store does not know this self-signed certificate
            try (SandboxClient untrusting = SandboxClient.connect("https://localhost:" + server.getPort())) {
                assertThatThrownBy(untrusting::create).isInstanceOf(ServerUnavailableException.class);
            }
            // plaintext against a TLS port fails too, as unavailable
            try (SandboxClient plaintext = SandboxClient.builder().target("https://localhost:" + server.getPort())
                    .useTls(false).build()) {
                assertThatThrownBy(plaintext::create).isInstanceOf(ServerUnavailableException.class);
            }
        } finally {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void fromEnvConnectsToTheComputeTarget() throws Exception {
        Server server = start(InsecureServerCredentials.create());
        try (SandboxClient client = SandboxClient.fromEnv(Map.of("CHALK_COMPUTE_TARGET", "localhost:" + server.getPort()))) {
            assertThat(client.create().info().isRunning()).isTrue();
        } finally {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
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
        assertThatThrownBy(client::list).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    private Server start(ServerCredentials credentials) throws Exception {
        ServerInterceptor capture = new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                              ServerCallHandler<Q, R> next) {
                String value = headers.get(AUTHORIZATION);
                if (value != null) {
                    authorizations.add(value);
                }
                return next.startCall(call, headers);
            }
        };
        return Grpc.newServerBuilderForPort(0, credentials)
                .addService(ServerInterceptors.intercept(new ScriptedSandboxService(), capture))
                .build().start();
    }
}
