package ai.chalk.compute.connection;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;
import org.jspecify.annotations.Nullable;

/**
 * The TLS trust of the HTTP clients that follow a server's signed links (dataset files, SQL result shards): the
 * system's certificates, and also those a connection was told to trust ({@code trustCertificates}), so that a
 * self-hosted server whose gRPC port has a certificate of its own serves its links over TLS to the same clients,
 * while links to a cloud's storage still verify against the system's. Host names are checked either way. (The gRPC
 * channel trusts the given certificates instead of the system's; links trust both, since they may lead elsewhere.)
 */
public final class SignedLinkTls {

    private static final Pattern CERTIFICATE =
            Pattern.compile("-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\\s]+)-----END CERTIFICATE-----");

    private SignedLinkTls() {}

    /**
     * The context trusting the system's certificates and those in {@code trustCertificates}.
     *
     * @param trustCertificates a PEM file of certificates to trust besides the system's, if any
     * @return the context
     * @throws UncheckedIOException when the file cannot be read or holds no certificate
     */
    public static SSLContext context(Optional<Path> trustCertificates) {
        if (trustCertificates.isEmpty()) {
            try {
                return SSLContext.getDefault();
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("the JDK has no default TLS context: " + e.getMessage(), e);
            }
        }
        Path pem = trustCertificates.get();
        try {
            KeyStore own = KeyStore.getInstance(KeyStore.getDefaultType());
            own.load(null, null);
            // the CERTIFICATE blocks only, as gRPC reads the same file: anything else in it (a key, text) is skipped
            Matcher block = CERTIFICATE.matcher(Files.readString(pem, StandardCharsets.US_ASCII));
            CertificateFactory x509 = CertificateFactory.getInstance("X.509");
            int i = 0;
            while (block.find()) {
                byte[] der = Base64.getMimeDecoder().decode(block.group(1));
                own.setCertificateEntry("trusted-" + i++, x509.generateCertificate(new ByteArrayInputStream(der)));
            }
            if (i == 0) {
                throw new IOException("it holds no PEM CERTIFICATE block");
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, new TrustManager[] {new Either(trustManager(own), trustManager(null))}, null);
            return context;
        } catch (IOException | IllegalArgumentException e) {
            throw new UncheckedIOException(
                    new IOException("cannot read trusted certificates from " + pem + ": " + e.getMessage(), e));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(
                    "cannot trust the certificates in " + pem + " for signed links: " + e.getMessage(), e);
        }
    }

    private static X509ExtendedTrustManager trustManager(@Nullable KeyStore store) throws GeneralSecurityException {
        TrustManagerFactory f = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        f.init(store); // null: the system's
        for (TrustManager m : f.getTrustManagers()) {
            if (m instanceof X509ExtendedTrustManager x) {
                return x;
            }
        }
        throw new GeneralSecurityException("the JDK gave no X.509 trust manager");
    }

    /** Trusts a server that either manager trusts, each checking the host name as it always does. */
    private static final class Either extends X509ExtendedTrustManager {

        private final X509ExtendedTrustManager own;
        private final X509ExtendedTrustManager system;

        Either(X509ExtendedTrustManager own, X509ExtendedTrustManager system) {
            this.own = own;
            this.system = system;
        }

        /** A check that may fail. */
        private interface Check {
            void run(X509ExtendedTrustManager m) throws CertificateException;
        }

        private void either(Check check) throws CertificateException {
            try {
                check.run(own);
            } catch (CertificateException first) {
                try {
                    check.run(system);
                } catch (CertificateException second) {
                    // both reasons: a certificate the client trusts but whose names miss the link's host fails the
                    // first check for its names, and the second only because no system authority signed it
                    CertificateException both = new CertificateException("the link's server is trusted neither by"
                            + " the client's trustCertificates (" + first.getMessage() + ") nor by the system's"
                            + " certificates (" + second.getMessage() + ")");
                    both.addSuppressed(first);
                    both.addSuppressed(second);
                    throw both;
                }
            }
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
                throws CertificateException {
            either(m -> m.checkServerTrusted(chain, authType, engine));
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
                throws CertificateException {
            either(m -> m.checkServerTrusted(chain, authType, socket));
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            either(m -> m.checkServerTrusted(chain, authType));
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
                throws CertificateException {
            throw new CertificateException("signed links' clients are not servers");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
                throws CertificateException {
            throw new CertificateException("signed links' clients are not servers");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            throw new CertificateException("signed links' clients are not servers");
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            X509Certificate[] a = own.getAcceptedIssuers();
            X509Certificate[] b = system.getAcceptedIssuers();
            X509Certificate[] all = java.util.Arrays.copyOf(a, a.length + b.length);
            System.arraycopy(b, 0, all, a.length, b.length);
            return all;
        }
    }
}
