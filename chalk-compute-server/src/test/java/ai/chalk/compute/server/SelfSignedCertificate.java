package ai.chalk.compute.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** A self-signed certificate for tests of TLS, made with openssl: one the system's trust store does not know. */
public final class SelfSignedCertificate {

    private SelfSignedCertificate() {}

    /**
     * Writes a self-signed certificate for {@code localhost} and {@code 127.0.0.1} to {@code cert} and its PKCS#8 key
     * to {@code key}; openssl's output goes to {@code openssl.log} in {@code dir}.
     */
    public static void write(Path dir, Path cert, Path key) throws Exception {
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
