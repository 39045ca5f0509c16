package ai.chalk.compute.server.egress;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * What a sandbox with a network policy trusts, written once into a directory bound read-only into each such sandbox at
 * {@value #MOUNT}: the proxy CA's certificate ({@value #CA_FILE}), the host's system CAs followed by it
 * ({@value #BUNDLE_FILE}, for OpenSSL, curl, Python's requests, git; an image without {@code ca-certificates} gets the
 * host's list this way), and a PKCS#12 trust store of the JDK's CAs and it ({@value #TRUSTSTORE_FILE}, password
 * {@value #TRUSTSTORE_PASSWORD}: the trust store is public, the password only the format's). {@link #env} names them in
 * the variables each kind of client reads.
 */
public final class SandboxTrust {

    /** Where sandboxes find the files. */
    public static final String MOUNT = "/chalk/egress";

    static final String CA_FILE = "ca.pem";
    static final String BUNDLE_FILE = "ca-bundle.pem";
    static final String TRUSTSTORE_FILE = "truststore.p12";
    static final String TRUSTSTORE_PASSWORD = "changeit";

    /** Where the host keeps its system CA list (Debian's, then Red Hat's, then Alpine's and BSD's). */
    private static final List<Path> SYSTEM_BUNDLES = List.of(
            Path.of("/etc/ssl/certs/ca-certificates.crt"),
            Path.of("/etc/pki/tls/certs/ca-bundle.crt"),
            Path.of("/etc/ssl/cert.pem"));

    private SandboxTrust() {}

    /** Writes the files for {@code ca} into {@code dir} (created, readable by all: it holds no secret). */
    public static Path write(Path dir, EgressCa ca) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        String own = ca.pem();
        write(dir.resolve(CA_FILE), own.getBytes(StandardCharsets.US_ASCII));
        String system = systemBundle();
        write(
                dir.resolve(BUNDLE_FILE),
                (system + (system.endsWith("\n") || system.isEmpty() ? "" : "\n") + "# Chalk Compute egress proxy\n"
                                + own)
                        .getBytes(StandardCharsets.US_ASCII));
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            int i = 0;
            for (X509Certificate c : jdkCas()) {
                store.setCertificateEntry("jdk-" + i++, c);
            }
            store.setCertificateEntry("chalk-compute-egress", ca.certificate());
            Path tmp = Files.createTempFile(dir, TRUSTSTORE_FILE, ".tmp");
            try (OutputStream out = Files.newOutputStream(tmp)) {
                store.store(out, TRUSTSTORE_PASSWORD.toCharArray());
            }
            Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-r--r--"));
            Files.move(tmp, dir.resolve(TRUSTSTORE_FILE), StandardCopyOption.REPLACE_EXISTING);
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot write the sandboxes' Java trust store: " + e.getMessage(), e);
        }
        return dir;
    }

    /**
     * The variables that point a sandbox's clients at the bundle: OpenSSL ({@code SSL_CERT_FILE}), curl
     * ({@code CURL_CA_BUNDLE}), Python requests ({@code REQUESTS_CA_BUNDLE}), git ({@code GIT_SSL_CAINFO}), Node.js
     * ({@code NODE_EXTRA_CA_CERTS}, added to its own list), and Java ({@code JAVA_TOOL_OPTIONS} with the trust store).
     */
    public static Map<String, String> env() {
        String bundle = MOUNT + "/" + BUNDLE_FILE;
        return Map.of(
                "SSL_CERT_FILE", bundle,
                "CURL_CA_BUNDLE", bundle,
                "REQUESTS_CA_BUNDLE", bundle,
                "GIT_SSL_CAINFO", bundle,
                "NODE_EXTRA_CA_CERTS", MOUNT + "/" + CA_FILE,
                "CHALK_EGRESS_CA_BUNDLE", bundle,
                "CHALK_EGRESS_TRUSTSTORE", MOUNT + "/" + TRUSTSTORE_FILE);
    }

    /** The JVM options that make a Java program in the sandbox trust the proxy CA besides the JDK's CAs. */
    public static String javaOptions() {
        return "-Djavax.net.ssl.trustStore=" + MOUNT + "/" + TRUSTSTORE_FILE + " -Djavax.net.ssl.trustStoreType=PKCS12"
                + " -Djavax.net.ssl.trustStorePassword=" + TRUSTSTORE_PASSWORD;
    }

    private static String systemBundle() throws IOException {
        for (Path p : SYSTEM_BUNDLES) {
            if (Files.isRegularFile(p)) {
                return Files.readString(p, StandardCharsets.US_ASCII);
            }
        }
        StringBuilder s = new StringBuilder();
        for (X509Certificate c : jdkCas()) {
            s.append(EgressCa.pem(c));
        }
        return s.toString();
    }

    private static List<X509Certificate> jdkCas() throws IOException {
        try {
            TrustManagerFactory f = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            f.init((KeyStore) null);
            List<X509Certificate> all = new ArrayList<>();
            for (TrustManager m : f.getTrustManagers()) {
                if (m instanceof X509TrustManager x) {
                    all.addAll(List.of(x.getAcceptedIssuers()));
                }
            }
            return all;
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot read the JDK's CAs: " + e.getMessage(), e);
        }
    }

    private static void write(Path file, byte[] bytes) throws IOException {
        Path tmp = Files.createTempFile(file.getParent(), file.getFileName().toString(), ".tmp");
        Files.write(tmp, bytes);
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-r--r--"));
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
