package ai.chalk.compute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/** Real servers on loopback for the tests: a Chalk Compute server recording call headers, certificates. */
public final class TestServers {

    private TestServers() {}

    /** A Chalk Compute server on a free loopback port that records the headers of every sandbox call. */
    public static final class RecordingServer implements AutoCloseable {

        private final ComputeServer server;
        private final List<Metadata> headers = new CopyOnWriteArrayList<>();

        public RecordingServer(Path dataDir, Path cert, Path key) throws Exception {
            ServerInterceptor capture = new ServerInterceptor() {
                @Override
                public <Q, R> ServerCall.Listener<Q> interceptCall(
                        ServerCall<Q, R> call, Metadata metadata, ServerCallHandler<Q, R> next) {
                    headers.add(metadata);
                    return next.startCall(call, metadata);
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
            server = builder.build().start();
        }

        public int port() {
            return server.port().orElseThrow();
        }

        /** The value of a header in each call received, in order ({@code null} where absent). */
        public List<String> header(String name) {
            Metadata.Key<String> key = Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER);
            return headers.stream().map(h -> h.get(key)).toList();
        }

        public int calls() {
            return headers.size();
        }

        @Override
        public void close() {
            server.close();
        }
    }

    /** Writes a self-signed certificate for localhost and 127.0.0.1 and its key, with openssl. */
    public static void selfSignedCertificate(Path dir, Path cert, Path key) throws Exception {
        Process openssl = new ProcessBuilder(
                        "openssl",
                        "req",
                        "-x509",
                        "-newkey",
                        "rsa:2048",
                        "-nodes",
                        "-keyout",
                        key.toString(),
                        "-out",
                        cert.toString(),
                        "-days",
                        "1",
                        "-subj",
                        "/CN=localhost",
                        "-addext",
                        "subjectAltName=DNS:localhost,IP:127.0.0.1")
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("openssl.log").toFile())
                .start();
        assertThat(openssl.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(openssl.exitValue()).as("openssl exit code").isZero();
    }
}
