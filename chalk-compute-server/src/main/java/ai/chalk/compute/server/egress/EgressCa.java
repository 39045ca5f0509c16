package ai.chalk.compute.server.egress;

import java.io.IOException;
import java.io.Reader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.Map;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * The server's own certificate authority for intercepted hosts: an ECDSA P-256 key and a self-signed certificate,
 * made once and kept in a directory only the server reads ({@value #KEY_FILE}, mode 0600), and the host certificates
 * it issues, each for one name, kept in memory for the server's life. Sandboxes trust it through {@link SandboxTrust};
 * nothing else does. The key never leaves the server: what a sandbox gets is the certificate.
 */
public final class EgressCa {

    static final String KEY_FILE = "ca-key.pem";
    static final String CERT_FILE = "ca.pem";
    /** The CA's validity; a CA that has less than a year left is replaced at start. */
    static final Duration CA_VALIDITY = Duration.ofDays(3650);
    /** A host certificate's validity; within a server's life, re-issued once it has less than a day left. */
    static final Duration LEAF_VALIDITY = Duration.ofDays(90);

    /**
     * A certificate issued for one host, with its key.
     *
     * @param key   the private key
     * @param chain the host's certificate, then the CA's
     */
    public record Issued(PrivateKey key, X509Certificate[] chain) {
        /** Without the key. */
        @Override
        public String toString() {
            return "Issued[key=****, chain=" + chain.length + " certificates]";
        }
    }

    private final PrivateKey key;
    private final X509Certificate certificate;
    private final SecureRandom random = new SecureRandom();
    private final Map<String, Issued> issued = LeastRecentlyUsed.map(EgressProxy.INTERCEPTED_HOSTS);

    private EgressCa(PrivateKey key, X509Certificate certificate) {
        this.key = key;
        this.certificate = certificate;
    }

    /** The CA kept in {@code dir}, made there first when missing or close to its end. */
    public static EgressCa loadOrCreate(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        Path keyFile = dir.resolve(KEY_FILE);
        Path certFile = dir.resolve(CERT_FILE);
        if (Files.isRegularFile(keyFile) && Files.isRegularFile(certFile)) {
            EgressCa ca = read(keyFile, certFile);
            if (ca.certificate.getNotAfter().toInstant().isAfter(Instant.now().plus(Duration.ofDays(365)))) {
                return ca;
            }
        }
        EgressCa ca = create();
        write(keyFile, pem(ca.key), "rw-------");
        write(certFile, ca.pem(), "rw-r--r--");
        return ca;
    }

    /** The CA's certificate, which sandboxes trust. */
    public X509Certificate certificate() {
        return certificate;
    }

    /** The CA's certificate in PEM. */
    public String pem() {
        return pem(certificate);
    }

    /** A certificate for {@code host} (a name, or an IP literal), issued now or earlier in this server's life. */
    public Issued issue(String host) {
        Issued current = issued.get(host);
        if (current != null
                && current.chain()[0]
                        .getNotAfter()
                        .toInstant()
                        .isAfter(Instant.now().plus(Duration.ofDays(1)))) {
            return current;
        }
        Issued fresh = newLeaf(host);
        issued.put(host, fresh);
        return fresh;
    }

    private Issued newLeaf(String host) {
        try {
            KeyPair pair = keyPair();
            Instant now = Instant.now();
            boolean literal = host.matches("[0-9.]+") || host.contains(":");
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(
                    certificate,
                    new BigInteger(127, random),
                    Date.from(now.minus(Duration.ofHours(1))),
                    Date.from(now.plus(LEAF_VALIDITY)),
                    new X500Name("CN=" + (literal ? "ip" : host.replaceAll("[,+=\"\\\\<>;#]", ""))),
                    pair.getPublic());
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
            b.addExtension(
                    Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment));
            b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
            b.addExtension(
                    Extension.subjectAlternativeName,
                    false,
                    new GeneralNames(
                            literal
                                    ? new GeneralName(
                                            GeneralName.iPAddress,
                                            InetAddress.getByName(host).getHostAddress())
                                    : new GeneralName(GeneralName.dNSName, host)));
            b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(pair.getPublic()));
            b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(certificate));
            return new Issued(pair.getPrivate(), new X509Certificate[] {sign(b), certificate});
        } catch (GeneralSecurityException | IOException | OperatorCreationException e) {
            throw new IllegalStateException("cannot issue a certificate for " + host + ": " + e.getMessage(), e);
        }
    }

    private static EgressCa create() {
        try {
            KeyPair pair = keyPair();
            Instant now = Instant.now();
            X500Name name = new X500Name("CN=Chalk Compute egress proxy CA " + now.getEpochSecond()
                    + ", O=Chalk Compute server, OU=sandbox egress");
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(
                    name,
                    new BigInteger(127, new SecureRandom()),
                    Date.from(now.minus(Duration.ofHours(1))),
                    Date.from(now.plus(CA_VALIDITY)),
                    name,
                    pair.getPublic());
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
            b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
            b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(pair.getPublic()));
            X509Certificate cert = new JcaX509CertificateConverter()
                    .getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(pair.getPrivate())));
            return new EgressCa(pair.getPrivate(), cert);
        } catch (GeneralSecurityException | IOException | OperatorCreationException e) {
            throw new IllegalStateException("cannot create the egress proxy's CA: " + e.getMessage(), e);
        }
    }

    private X509Certificate sign(X509v3CertificateBuilder b)
            throws GeneralSecurityException, OperatorCreationException {
        X509CertificateHolder holder = b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(key));
        return new JcaX509CertificateConverter().getCertificate(holder);
    }

    private static KeyPair keyPair() throws GeneralSecurityException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"));
        return g.generateKeyPair();
    }

    private static EgressCa read(Path keyFile, Path certFile) throws IOException {
        try (Reader k = Files.newBufferedReader(keyFile, StandardCharsets.US_ASCII);
                PEMParser keys = new PEMParser(k);
                Reader c = Files.newBufferedReader(certFile, StandardCharsets.US_ASCII);
                PEMParser certs = new PEMParser(c)) {
            Object parsedKey = keys.readObject();
            PrivateKey key = parsedKey instanceof PEMKeyPair pair
                    ? new JcaPEMKeyConverter().getKeyPair(pair).getPrivate()
                    : new JcaPEMKeyConverter().getPrivateKey((org.bouncycastle.asn1.pkcs.PrivateKeyInfo) parsedKey);
            X509Certificate cert =
                    new JcaX509CertificateConverter().getCertificate((X509CertificateHolder) certs.readObject());
            return new EgressCa(key, cert);
        } catch (GeneralSecurityException | ClassCastException e) {
            throw new IOException("the egress CA in " + keyFile.getParent() + " is unreadable (" + e.getMessage()
                    + "); remove the directory to have a new one made");
        }
    }

    static String pem(Object o) {
        StringWriter s = new StringWriter();
        try (JcaPEMWriter w = new JcaPEMWriter(s)) {
            w.writeObject(o);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return s.toString();
    }

    private static void write(Path file, String text, String mode) throws IOException {
        Path tmp = Files.createTempFile(file.getParent(), file.getFileName().toString(), ".tmp");
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
        Files.writeString(tmp, text, StandardCharsets.US_ASCII);
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString(mode));
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
