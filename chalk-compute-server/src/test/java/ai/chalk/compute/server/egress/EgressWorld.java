package ai.chalk.compute.server.egress;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * The egress tests' "internet": a network namespace of the test's own behind a veth pair, reached from the host (where
 * the proxy runs) only by routing, with two IPv4 addresses ({@link #farA}, {@link #farB}) and an IPv6 one
 * ({@link #farV6}), serving HTTP on 80 and 8080, HTTPS on 443 and 8443 (a certificate of {@link #caPem}, a CA of the
 * test's own, for every test name and both IPv4 addresses) and a UDP echo on 5353 ({@code world_server.py}). Every
 * request that arrives is recorded in a file of the host ({@link #received()}), which no sandbox sees.
 *
 * <p>Names, resolved by the proxy through {@link #options()}: {@code api.allowed.test}, {@code other.test},
 * {@code wild.test}, {@code x.wild.test}, {@code deep.x.wild.test}, {@code evil.test}, {@code forward.test} on
 * {@code farA}; {@code denied.test} on {@code farB}; {@code v6only.test} on {@code farV6} only.
 */
public final class EgressWorld implements AutoCloseable {

    public static final List<String> ON_A = List.of(
            "api.allowed.test",
            "other.test",
            "wild.test",
            "x.wild.test",
            "deep.x.wild.test",
            "evil.test",
            "forward.test");

    public final Path dir;
    public final InetAddress hostEnd;
    public final InetAddress farA;
    public final InetAddress farB;
    public final InetAddress farV6;
    /** The CA of the servers' certificate, in PEM. */
    public final String caPem;

    private final List<Process> processes = new ArrayList<>();
    private final ObjectMapper json = new ObjectMapper();
    private String ns;

    private EgressWorld(Path dir, int x) throws IOException {
        this.dir = dir;
        this.hostEnd = InetAddress.getByName("198.19." + x + ".1");
        this.farA = InetAddress.getByName("198.19." + x + ".2");
        this.farB = InetAddress.getByName("198.19." + x + ".3");
        this.farV6 = InetAddress.getByName("fd19:" + Integer.toHexString(x) + "::2");
        this.caPem = certificates(dir, farA, farB);
    }

    /** Builds the namespace and starts its servers. */
    public static EgressWorld start() throws Exception {
        Path dir = Files.createTempDirectory("chalk-egress-world");
        int x = ThreadLocalRandom.current().nextInt(1, 250);
        EgressWorld w = new EgressWorld(dir, x);
        try {
            w.build(x);
        } catch (Exception | AssertionError e) {
            w.close();
            throw e;
        }
        return w;
    }

    private void build(int x) throws Exception {
        Process holder = start(List.of("unshare", "--net", "--", "sleep", "86400"));
        String own = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString();
        Path nsLink = Path.of("/proc", Long.toString(holder.pid()), "ns", "net");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!Files.exists(nsLink)
                || Files.readSymbolicLink(nsLink).toString().equals(own)) {
            assertThat(System.nanoTime()).as("unshare --net").isLessThan(deadline);
            Thread.sleep(5);
        }
        String tag = Integer.toHexString(ThreadLocalRandom.current().nextInt(0x100000, 0xffffff));
        String host = "chkw" + tag;
        String peer = "chkwp" + tag;
        ns = "--net=" + nsLink;
        String v6 = "fd19:" + Integer.toHexString(x) + "::";
        ok("ip", "link", "add", host, "type", "veth", "peer", "name", peer, "netns", Long.toString(holder.pid()));
        ok("ip", "addr", "add", hostEnd.getHostAddress() + "/29", "dev", host);
        ok("ip", "-6", "addr", "add", v6 + "1/64", "dev", host, "nodad");
        ok("ip", "link", "set", host, "up");
        ok("nsenter", ns, "--", "ip", "addr", "add", farA.getHostAddress() + "/29", "dev", peer);
        ok("nsenter", ns, "--", "ip", "addr", "add", farB.getHostAddress() + "/29", "dev", peer);
        ok("nsenter", ns, "--", "ip", "-6", "addr", "add", v6 + "2/64", "dev", peer, "nodad");
        ok("nsenter", ns, "--", "ip", "link", "set", peer, "up");
        ok("nsenter", ns, "--", "ip", "link", "set", "lo", "up");
        Path script = dir.resolve("world_server.py");
        try (InputStream in = EgressWorld.class.getResourceAsStream("/egress/world_server.py")) {
            Files.copy(in, script);
        }
        Process server = start(List.of("nsenter", ns, "--", "/usr/bin/python3", script.toString(), dir.toString()));
        BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        if (!"ready".equals(line)) {
            server.waitFor(5, TimeUnit.SECONDS);
            throw new AssertionError("the world's servers did not start: " + line + "\n" + readAll(out));
        }
        drain(out);
    }

    /** Reads what a process of the world says from now on, so that it never blocks on a full pipe. */
    private static void drain(BufferedReader out) {
        Thread drain = new Thread(() -> {
            try {
                out.transferTo(java.io.Writer.nullWriter());
            } catch (IOException e) {
                // ended
            }
        });
        drain.setDaemon(true);
        drain.start();
    }

    /**
     * Makes a service of the test JVM a server of this world: connections to {@code farA:port} are relayed, from inside
     * the world, to {@code hostEnd:hostPort}, where the service listens (bound to {@code hostEnd} or the wildcard).
     * Sandboxes reach it as any server of the world, by routing; the host's own addresses stay refused to them.
     *
     * @return {@code port}, once the relay listens
     */
    public int relay(int port, int hostPort) throws Exception {
        Process relay = start(List.of(
                "nsenter",
                ns,
                "--",
                "/usr/bin/python3",
                "-c",
                """
                import socket, sys, threading
                def pipe(a, b):
                    try:
                        while True:
                            data = a.recv(65536)
                            if not data:
                                break
                            b.sendall(data)
                    except OSError:
                        pass
                    finally:
                        try:
                            b.shutdown(socket.SHUT_WR)
                        except OSError:
                            pass
                s = socket.create_server((sys.argv[1], int(sys.argv[2])))
                print('listening', flush=True)
                while True:
                    c, _ = s.accept()
                    u = socket.create_connection((sys.argv[3], int(sys.argv[4])))
                    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
                    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
                """,
                farA.getHostAddress(),
                Integer.toString(port),
                hostEnd.getHostAddress(),
                Integer.toString(hostPort)));
        BufferedReader out = new BufferedReader(new InputStreamReader(relay.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        if (!"listening".equals(line)) {
            throw new AssertionError("the relay did not start: " + line + "\n" + readAll(out));
        }
        drain(out);
        return port;
    }

    /** How the proxy resolves the world's names. */
    public EgressOptions options() {
        EgressOptions o = EgressOptions.DEFAULTS.withUpstreamTrust(dir.resolve("ca.pem"));
        for (String name : ON_A) {
            o = o.withHost(name, farA);
        }
        return o.withHost("denied.test", farB).withHost("v6only.test", farV6);
    }

    /** Every request (and UDP datagram) received so far, oldest first. */
    public List<JsonNode> received() throws IOException {
        Path f = dir.resolve("received.jsonl");
        List<JsonNode> all = new ArrayList<>();
        if (Files.exists(f)) {
            for (String l : Files.readAllLines(f, StandardCharsets.UTF_8)) {
                if (!l.isBlank()) {
                    all.add(json.readTree(l));
                }
            }
        }
        return all;
    }

    /** The requests received whose Host header (without a port) is {@code host}. */
    public List<JsonNode> receivedFor(String host) throws IOException {
        return received().stream()
                .filter(r -> r.hasNonNull("host")
                        && r.get("host").asText().replaceAll(":[0-9]+$", "").equals(host))
                .toList();
    }

    /** Forgets what was received. */
    public void clear() throws IOException {
        Files.deleteIfExists(dir.resolve("received.jsonl"));
    }

    private static String readAll(BufferedReader in) {
        StringBuilder s = new StringBuilder();
        in.lines().forEach(l -> s.append(l).append('\n'));
        return s.toString();
    }

    private Process start(List<String> command) throws IOException {
        Process p = new ProcessBuilder(command)
                .directory(new File("/"))
                .redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        processes.add(p);
        return p;
    }

    private static void ok(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("%s: %s", List.of(command), out).isZero();
    }

    /** A CA and a certificate of it for every test name and the two IPv4 addresses; returns the CA's PEM. */
    private static String certificates(Path dir, InetAddress a, InetAddress b) {
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
            g.initialize(new ECGenParameterSpec("secp256r1"));
            KeyPair caKeys = g.generateKeyPair();
            KeyPair serverKeys = g.generateKeyPair();
            Instant now = Instant.now();
            X500Name caName = new X500Name("CN=egress test world CA");
            JcaX509v3CertificateBuilder ca = new JcaX509v3CertificateBuilder(
                    caName,
                    BigInteger.valueOf(1),
                    Date.from(now.minus(Duration.ofHours(1))),
                    Date.from(now.plus(Duration.ofDays(2))),
                    caName,
                    caKeys.getPublic());
            ca.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
            X509Certificate caCert = new JcaX509CertificateConverter()
                    .getCertificate(
                            ca.build(new JcaContentSignerBuilder("SHA256withECDSA").build(caKeys.getPrivate())));
            List<GeneralName> names = new ArrayList<>();
            for (String n : ON_A) {
                names.add(new GeneralName(GeneralName.dNSName, n));
            }
            names.add(new GeneralName(GeneralName.dNSName, "denied.test"));
            names.add(new GeneralName(GeneralName.dNSName, "v6only.test"));
            names.add(new GeneralName(GeneralName.iPAddress, a.getHostAddress()));
            names.add(new GeneralName(GeneralName.iPAddress, b.getHostAddress()));
            JcaX509v3CertificateBuilder server = new JcaX509v3CertificateBuilder(
                    caCert,
                    BigInteger.valueOf(new SecureRandom().nextInt(1 << 30)),
                    Date.from(now.minus(Duration.ofHours(1))),
                    Date.from(now.plus(Duration.ofDays(2))),
                    new X500Name("CN=api.allowed.test"),
                    serverKeys.getPublic());
            server.addExtension(
                    Extension.subjectAlternativeName, false, new GeneralNames(names.toArray(GeneralName[]::new)));
            X509Certificate serverCert = new JcaX509CertificateConverter()
                    .getCertificate(
                            server.build(new JcaContentSignerBuilder("SHA256withECDSA").build(caKeys.getPrivate())));
            String caPem = EgressCa.pem(caCert);
            Files.writeString(dir.resolve("ca.pem"), caPem);
            Files.writeString(dir.resolve("server.pem"), EgressCa.pem(serverCert) + caPem);
            Files.writeString(
                    dir.resolve("server-key.pem"),
                    "-----BEGIN PRIVATE KEY-----\n"
                            + java.util.Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                                    .encodeToString(serverKeys.getPrivate().getEncoded())
                            + "\n-----END PRIVATE KEY-----\n");
            return caPem;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        for (Process p : processes) {
            p.destroyForcibly();
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder())
                    .forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // a temporary directory
        }
    }
}
