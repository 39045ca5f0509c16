package ai.chalk.compute.server.egress;

import static ai.chalk.compute.server.egress.Policies.header;
import static ai.chalk.compute.server.egress.Policies.hosts;
import static ai.chalk.compute.server.egress.Policies.with;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a sandbox with a network policy can make the server's egress proxy hold: the proxy runs in the server, so each
 * connection costs the server file descriptors, each intercepted host a certificate and a TLS context on its heap, each
 * name lookup one of its threads. A sandbox that asks for these in a loop must meet a bound, and the other sandboxes
 * must still be served. Connections come from this test as a sandbox's would, to the sandbox's proxy address.
 */
class EgressProxyResourcesSecurityTest {

    private static EgressWorld world;

    @TempDir
    Path dir;

    @BeforeAll
    static void startWorld() throws Exception {
        world = EgressWorld.start();
    }

    @AfterAll
    static void stopWorld() {
        if (world != null) {
            world.close();
        }
    }

    private static InetAddress loopback() throws IOException {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        return InetAddress.getByName("127." + r.nextInt(1, 250) + "." + r.nextInt(1, 250) + "." + r.nextInt(2, 250));
    }

    private static long descriptors() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    private static List<Socket> connect(InetAddress at, int count) throws IOException {
        List<Socket> sockets = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sockets.add(new Socket(at, EgressProxy.PROXY_PORT));
        }
        return sockets;
    }

    private static void close(List<Socket> sockets) throws IOException {
        for (Socket s : sockets) {
            s.close();
        }
    }

    /** The status line of a request for {@code other.test} through the proxy at {@code at}. */
    private static String get(InetAddress at) throws IOException {
        return get(at, "/");
    }

    /** The status line of a request for {@code path} of {@code other.test} through the proxy at {@code at}. */
    private static String get(InetAddress at, String path) throws IOException {
        return get(at, path, false);
    }

    /** As {@link #get(InetAddress, String)}, then the whole refusal (the proxy closes the connection after one). */
    private static String refusal(InetAddress at, String path) throws IOException {
        return get(at, path, true);
    }

    private static String get(InetAddress at, String path, boolean whole) throws IOException {
        try (Socket s = new Socket(at, EgressProxy.PROXY_PORT)) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(("GET http://other.test" + path + " HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            if (whole) {
                return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            }
            String line =
                    new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII)).readLine();
            return line == null ? "closed" : line;
        }
    }

    /**
     * The attack: 300 connections to the proxy, held open. Before, the proxy held every one (a file descriptor of the
     * server each; with enough of them the server could accept no call and open no file). Now it holds the sandbox's
     * share and closes the rest as it accepts them; another sandbox is still served, up to what is left of the total.
     */
    @Test
    void aSandboxHoldsItsShareOfConnectionsAndAllSandboxesTheTotal() throws Exception {
        try (EgressProxy proxy = EgressProxy.start(
                        dir, world.options().withConnections(new EgressConnections(50, 80)), List.of());
                EgressEndpoint greedy = proxy.open("greedy", loopback(), hosts("other.test"));
                EgressEndpoint modest = proxy.open("modest", loopback(), hosts("other.test"))) {
            long before = descriptors();
            List<Socket> flood = connect(greedy.address(), 300);
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.connections() == 50);
            Thread.sleep(200); // the surplus closed, not merely not counted
            assertThat(proxy.connections()).isEqualTo(50);
            // this test's own 300 sockets, and the proxy's side of 50 of them
            assertThat(descriptors() - before).isBetween(300L, 300L + 50 + 20);

            assertThat(get(modest.address())).startsWith("HTTP/1.1 200");
            // that request's connection is let go of first: closed while the next ones are refused at the total, it
            // left the proxy one short of it (CI99, a busy host)
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.connections() == 50);
            List<Socket> more = connect(modest.address(), 40);
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.connections() == 80);
            Thread.sleep(200);
            assertThat(proxy.connections()).isEqualTo(80);
            assertThat(get(modest.address())).as("the total is reached").isEqualTo("closed");
            // a sandbox that holds next to nothing is not cut off by the others
            try (EgressEndpoint late = proxy.open("late", loopback(), hosts("other.test"))) {
                assertThat(get(late.address())).startsWith("HTTP/1.1 200");
                Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.connections() == 80);
                List<Socket> few = connect(late.address(), EgressConnections.GUARANTEED + 5);
                Awaitility.await()
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> proxy.connections() == 80 + EgressConnections.GUARANTEED);
                Thread.sleep(200);
                assertThat(proxy.connections()).isEqualTo(80 + EgressConnections.GUARANTEED);
                close(few);
            }
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.connections() == 80);

            close(flood);
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> proxy.connections() == 30);
            assertThat(get(modest.address())).startsWith("HTTP/1.1 200");
            assertThat(get(greedy.address())).startsWith("HTTP/1.1 200");
            close(more);
        }
    }

    /**
     * The attack: a rule whose regex backtracks catastrophically ({@code (a+)+\1$}, the tenant's own or a careless one),
     * and requests whose path makes it do so, on more connections than the proxy has threads. Each match ran on a
     * thread of the proxy, which every sandbox shares, for good: no sandbox of any tenant was served again. Now a
     * request's matches give up at their deadline and the request is refused.
     */
    @Test
    void aRegexThatBacktracksWithoutEndHoldsNoThreadOfTheProxy() throws Exception {
        RequestMatch backtracks = new RequestMatch(
                Optional.of(TextMatcher.Regex.of("path.regex", "/(a+)+\\1$")), Set.of(), List.of(), List.of());
        try (EgressProxy proxy = EgressProxy.start(dir, world.options(), List.of());
                EgressEndpoint evil = proxy.open(
                        "evil",
                        loopback(),
                        Policies.with(hosts(), "other.test", Policies.header(backtracks, "X-Key", "value")));
                EgressEndpoint other = proxy.open("other", loopback(), hosts("other.test"))) {
            String path = "/" + "a".repeat(40) + "!"; // 26 a's take 2.5 s, each one more about twice that
            List<CompletableFuture<String>> stuck = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                stuck.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        return refusal(evil.address(), path);
                    } catch (IOException e) {
                        return e.toString();
                    }
                }));
            }
            long started = System.nanoTime();
            for (CompletableFuture<String> s : stuck) {
                assertThat(s.get(30, TimeUnit.SECONDS))
                        .startsWith("HTTP/1.1 403")
                        .contains("took longer than");
            }
            assertThat(get(other.address())).startsWith("HTTP/1.1 200");
            // the rule matches it, so its header would go with it, which over plain HTTP is refused
            assertThat(refusal(evil.address(), "/aaaa"))
                    .as("a path the regex decides at once")
                    .startsWith("HTTP/1.1 403")
                    .contains("only sent over TLS")
                    .doesNotContain("took longer than");
            assertThat(get(evil.address(), "/b"))
                    .as("a path the regex does not match")
                    .startsWith("HTTP/1.1 200");
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
        }
    }

    /**
     * The attack: two Host headers (the proxy checks and routes by the first; a server reading the last would route
     * the request, and what the rules add to it, to another of its sites), or a fragment in the request target (the
     * rules' path checks stop at it). RFC 9112 allows neither.
     */
    @Test
    void aRequestWithTwoHostHeadersOrAFragmentIsRefused() throws Exception {
        try (EgressProxy proxy = EgressProxy.start(dir, world.options(), List.of());
                EgressEndpoint endpoint = proxy.open("two-hosts", loopback(), hosts("other.test"))) {
            for (String request : List.of(
                    "GET /two HTTP/1.1\r\nHost: other.test\r\nHost: evil.test\r\nConnection: close\r\n\r\n",
                    // the rules' checks stop at a '#', a server may not
                    "GET /v1/x#/../admin HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")) {
                try (Socket s = new Socket(endpoint.address(), EgressProxy.HTTP_PORT)) {
                    s.setSoTimeout(10_000);
                    s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
                    String line = new BufferedReader(
                                    new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII))
                            .readLine();
                    assertThat(line).as(request).startsWith("HTTP/1.1 400");
                }
            }
        }
    }

    /**
     * The attack: downloads through the proxy that the sandbox never reads. The kernel let the buffers of the proxy's
     * two sockets of each grow to megabytes, all of it from the host's one pool of TCP memory and charged to the server,
     * not the sandbox. Now each connection holds at most {@link EgressConnections#CONNECTION_BYTES}.
     */
    @Test
    void downloadsNobodyReadsHoldLittleOfTheHostsTcpMemory() throws Exception {
        int connections = 40;
        try (EgressProxy proxy = EgressProxy.start(dir, world.options(), List.of());
                EgressEndpoint endpoint = proxy.open("hoarder", loopback(), hosts("other.test"))) {
            List<Socket> downloads = new ArrayList<>();
            for (int i = 0; i < connections; i++) {
                Socket s = new Socket(endpoint.address(), EgressProxy.PROXY_PORT);
                s.getOutputStream()
                        .write("GET http://other.test/bytes?n=400000000 HTTP/1.1\r\nHost: other.test\r\n\r\n"
                                .getBytes(StandardCharsets.US_ASCII));
                downloads.add(s);
            }
            Thread.sleep(3000); // every buffer on the way fills in a fraction of that
            long held = heldByProxy(endpoint.address());
            assertThat(held).isPositive().isLessThanOrEqualTo(connections * EgressConnections.CONNECTION_BYTES);
            close(downloads);
        }
    }

    /**
     * The bytes queued in the proxy's sockets for a sandbox at {@code proxy} ({@code ss -tm}: received and not yet
     * read, and waiting to be sent): its side of the sandbox's connections, and its connections to the world.
     */
    private static long heldByProxy(InetAddress proxy) throws Exception {
        Process ss = new ProcessBuilder("ss", "-tmnH").redirectErrorStream(true).start();
        List<String> lines = new BufferedReader(new InputStreamReader(ss.getInputStream(), StandardCharsets.US_ASCII))
                .lines()
                .toList();
        assertThat(ss.waitFor(10, TimeUnit.SECONDS)).isTrue();
        String sandboxSide = proxy.getHostAddress() + ":" + EgressProxy.PROXY_PORT;
        String upstream = world.farA.getHostAddress() + ":80";
        long held = 0;
        boolean proxys = false;
        for (String line : lines) {
            if (!line.startsWith(" ") && !line.startsWith("\t")) {
                String[] f =
                        line.trim().replace("[::ffff:", "").replace("]", "").split("\\s+");
                proxys = f.length >= 5 && (f[3].equals(sandboxSide) || f[4].equals(upstream));
            } else if (proxys && line.contains("skmem:(")) {
                java.util.regex.Matcher m =
                        java.util.regex.Pattern.compile("[(,](r|w)(\\d+)").matcher(line);
                while (m.find()) {
                    held += Long.parseLong(m.group(2));
                }
            }
        }
        return held;
    }

    /**
     * The attack: TLS handshakes naming a new host under a wildcard the policy intercepts, each of which had the proxy
     * issue a certificate and build a TLS context, kept for the server's life. Now at most
     * {@value EgressProxy#INTERCEPTED_HOSTS} are kept, and a host that comes back is served again.
     */
    @Test
    void interceptedHostsAreKeptUpToABound() throws Exception {
        int names = EgressProxy.INTERCEPTED_HOSTS + 100;
        EgressOptions options = world.options();
        for (int i = 0; i < names; i++) {
            options = options.withHost("n" + i + ".wild.test", world.farA);
        }
        try (EgressProxy proxy = EgressProxy.start(dir, options, List.of());
                EgressEndpoint endpoint = proxy.open(
                        "namer", loopback(), with(hosts(), "*.wild.test", header(RequestMatch.ANY, "X-T", "1")))) {
            SSLContext tls = RawHttps.trusting(world.caPem, proxy.caCertificate());
            List<CompletableFuture<String>> handshakes = new ArrayList<>();
            for (int i = 0; i < names; i++) {
                String name = "n" + i + ".wild.test";
                handshakes.add(CompletableFuture.supplyAsync(() -> handshake(tls, endpoint.address(), name)));
                if (handshakes.size() % 16 == 0) {
                    CompletableFuture.allOf(handshakes.toArray(CompletableFuture[]::new))
                            .get(60, TimeUnit.SECONDS);
                }
            }
            for (CompletableFuture<String> h : handshakes) {
                assertThat(h.get(60, TimeUnit.SECONDS)).isEqualTo("CN=n" + handshakes.indexOf(h) + ".wild.test");
            }
            assertThat(proxy.interceptedHosts()).isEqualTo(EgressProxy.INTERCEPTED_HOSTS);
            assertThat(handshake(tls, endpoint.address(), "n0.wild.test")).isEqualTo("CN=n0.wild.test");
        }
    }

    /** The subject of the certificate the proxy presents for {@code name}, in a handshake to its port 443. */
    private static String handshake(SSLContext tls, InetAddress at, String name) {
        try (Socket plain = new Socket()) {
            plain.connect(new InetSocketAddress(at, EgressProxy.HTTPS_PORT), 10_000);
            plain.setSoTimeout(10_000);
            try (SSLSocket s = (SSLSocket) tls.getSocketFactory().createSocket(plain, name, 443, false)) {
                SSLParameters p = s.getSSLParameters();
                p.setServerNames(List.of(new SNIHostName(name)));
                p.setEndpointIdentificationAlgorithm("HTTPS");
                s.setSSLParameters(p);
                s.startHandshake();
                return ((java.security.cert.X509Certificate) s.getSession().getPeerCertificates()[0])
                        .getSubjectX500Principal()
                        .getName();
            }
        } catch (IOException e) {
            throw new IllegalStateException(name + ": " + e, e);
        }
    }
}
