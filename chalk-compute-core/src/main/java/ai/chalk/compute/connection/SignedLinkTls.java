package ai.chalk.compute.connection;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Optional;
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
 * while links to a cloud's storage still verify against the system's. Host names are checked either way.
 */
public final class SignedLinkTls {

    private SignedLinkTls() {}

    /**
     * The context trusting the system's certificates and those in {@code trustCertificates}.
     *
     * @param trustCertificates a PEM file of certificates to trust besides the system's, if any
     * @return the context
     * @throws UncheckedIOException when the file cannot be read or holds no certificate
     */
    public static SSLContext context(Optional<Path> trustCertificates) {
        try {
            if (trustCertificates.isEmpty()) {
                return SSLContext.getDefault();
            }
            Path pem = trustCertificates.get();
            KeyStore own = KeyStore.getInstance(KeyStore.getDefaultType());
            own.load(null, null);
            try (InputStream in = Files.newInputStream(pem)) {
                int i = 0;
                for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                    own.setCertificateEntry("trusted-" + i++, c);
                }
                if (i == 0) {
                    throw new IOException("no certificate in it");
                }
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, new TrustManager[] {new Either(trustManager(own), trustManager(null))}, null);
            return context;
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot read trusted certificates from " + trustCertificates.get() + ": " + e.getMessage(), e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot set up TLS for signed links: " + e.getMessage(), e);
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
                    second.addSuppressed(first);
                    throw second;
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
