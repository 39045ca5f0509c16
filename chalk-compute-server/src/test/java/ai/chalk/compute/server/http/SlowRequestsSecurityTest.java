package ai.chalk.compute.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.SelfSignedCertificate;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A peer without credentials opens more connections to the HTTP port than it has threads and sends half a request on
 * each, or whole headers announcing a body it never sends: the JDK's server reads headers, and after the answer what is
 * left of the body, on the threads that serve exchanges, with no time limit, so before, the port answered no one (the
 * JWKS, every transfer) for as long as the peer kept them open. Exchanges now have a deadline; one its handler grants
 * more (a transfer whose link was checked) has all the time its body takes.
 */
class SlowRequestsSecurityTest {

    private static final Duration DEADLINE = Duration.ofSeconds(1);

    @Test
    void halfSentRequestsOnEveryThreadDoNotStopThePort() throws Exception {
        stallEveryThreadWith("GET /doc HTTP/1.1\r\nHost: x\r\n");
    }

    @Test
    void announcedBodiesNeverSentDoNotStopThePort() throws Exception {
        // answered at once (405), after which the JDK's server reads the body that never comes
        stallEveryThreadWith("POST /doc HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n");
    }

    /**
     * Over TLS the JDK's server does the handshake on the thread that is to serve the exchange: a peer that starts a
     * handshake on every thread and never ends it is cut off at the deadline as a half-sent request is, and the port
     * still answers others.
     */
    @Test
    void halfSentTlsHandshakesOnEveryThreadDoNotStopTheHttpsPort(@TempDir Path dir) throws Exception {
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        SelfSignedCertificate.write(dir, cert, key);
        try (HttpPort port = HttpPort.open("127.0.0.1", 0, DEADLINE, ExchangeThreads.STALL, HttpPort.tls(cert, key))) {
            assertThat(port.url()).startsWith("https://");
            // a TLS handshake record announcing 512 bytes, and none of them
            stallEveryThread(
                    port,
                    new byte[] {0x16, 0x03, 0x01, 0x02, 0x00},
                    HttpClient.newBuilder().sslContext(trusting(cert)).build());
        }
    }

    /** A client context trusting the certificate in {@code pem} alone. */
    private static SSLContext trusting(Path pem) throws Exception {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        try (InputStream in = Files.newInputStream(pem)) {
            store.setCertificateEntry(
                    "server", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory f = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        f.init(store);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, f.getTrustManagers(), null);
        return context;
    }

    /**
     * Sends {@code request} on more connections than the port has threads, and no more: the port still answers others,
     * and cuts each of those connections off.
     */
    private static void stallEveryThreadWith(String request) throws Exception {
        try (HttpPort port = HttpPort.open("127.0.0.1", 0, DEADLINE)) {
            stallEveryThread(port, ascii(request), HttpClient.newHttpClient());
        }
    }

    /**
     * Sends {@code stall} on more connections than {@code port} has threads: {@code client} still gets a document, and
     * each of those connections is cut off.
     */
    private static void stallEveryThread(HttpPort port, byte[] stall, HttpClient client) throws Exception {
        port.document("/doc", "text/plain", () -> "served\n");
        URI uri = URI.create(port.url());
        List<Socket> stalled = new ArrayList<>();
        try {
            for (int i = 0; i < HttpPort.MAX_CONCURRENT_EXCHANGES + 4; i++) {
                Socket s = new Socket(uri.getHost(), uri.getPort());
                s.getOutputStream().write(stall);
                stalled.add(s);
            }
            HttpResponse<String> answer = client.send(
                    HttpRequest.newBuilder(uri.resolve("/doc"))
                            .timeout(Duration.ofSeconds(15))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(answer.statusCode()).isEqualTo(200);
            assertThat(answer.body()).isEqualTo("served\n");
            for (Socket s : stalled) {
                assertThat(closedByServer(s))
                        .as("an exchange past its deadline is cut off")
                        .isTrue();
            }
        } finally {
            for (Socket s : stalled) {
                s.close();
            }
        }
    }

    @Test
    void aGrantedBodySlowerThanTheDeadlineIsReadWhole() throws Exception {
        try (HttpPort port = HttpPort.open("127.0.0.1", 0, DEADLINE)) {
            port.route("/upload", exchange -> {
                port.granted();
                byte[] body = exchange.getRequestBody().readAllBytes();
                HttpPort.send(exchange, 200, "text/plain", "read " + body.length + "\n");
            });
            URI uri = URI.create(port.url());
            try (Socket s = new Socket(uri.getHost(), uri.getPort())) {
                OutputStream out = s.getOutputStream();
                out.write(ascii("PUT /upload HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 6\r\n\r\n"));
                out.flush();
                for (int i = 0; i < 6; i++) { // three deadlines in all
                    Thread.sleep(DEADLINE.toMillis() / 2);
                    out.write('x');
                    out.flush();
                }
                s.setSoTimeout(10_000);
                String answer = new String(s.getInputStream().readNBytes(200), StandardCharsets.US_ASCII);
                assertThat(answer).startsWith("HTTP/1.1 200").endsWith("read 6\n");
            }
        }
    }

    @Test
    void grantedTransfersThatStandStillLeaveThreadsToTheRestAndAreCutOff() throws Exception {
        // a link holder opening downloads it never reads held every thread for good: no JWKS, no other transfer
        Duration stall = Duration.ofSeconds(2);
        try (HttpPort port = HttpPort.open("127.0.0.1", 0, DEADLINE, stall)) {
            port.document("/doc", "text/plain", () -> "served\n");
            port.route("/download", exchange -> {
                try {
                    port.granted();
                } catch (ExchangeThreads.PortBusyException e) {
                    HttpPort.send(exchange, 503, "text/plain", e.getMessage() + "\n");
                    return;
                }
                exchange.sendResponseHeaders(200, 0);
                try (OutputStream out = exchange.getResponseBody()) {
                    byte[] chunk = new byte[64 << 10];
                    for (int i = 0; i < 4096; i++) { // 256 MiB: more than the sockets' buffers hold
                        out.write(chunk);
                        port.progressed();
                    }
                }
            });
            URI uri = URI.create(port.url());
            List<Socket> unread = new ArrayList<>();
            try {
                int granted = HttpPort.MAX_CONCURRENT_EXCHANGES - ExchangeThreads.KEPT_FOR_OTHERS;
                for (int i = 0; i < granted; i++) {
                    Socket s = new Socket(uri.getHost(), uri.getPort());
                    s.getOutputStream().write(ascii("GET /download HTTP/1.1\r\nHost: x\r\n\r\n"));
                    unread.add(s);
                }
                Thread.sleep(500); // their handlers write until the sockets' buffers are full
                assertThat(statusLine(uri, "/download"))
                        .as("a download past the transfers the port serves at once")
                        .startsWith("HTTP/1.1 503");
                assertThat(statusLine(uri, "/doc"))
                        .as("the threads kept for the rest still answer")
                        .startsWith("HTTP/1.1 200");
                // nothing is read: once their bytes have stood still for the stall, they are cut off, and their
                // threads serve again
                Awaitility.await()
                        .atMost(stall.multipliedBy(5))
                        .pollInterval(Duration.ofMillis(200))
                        .until(() -> statusLine(uri, "/download").startsWith("HTTP/1.1 200"));
                for (Socket s : unread) {
                    assertThat(closedByServer(s))
                            .as("a transfer whose bytes stand still is cut off")
                            .isTrue();
                }
            } finally {
                for (Socket s : unread) {
                    s.close();
                }
            }
        }
    }

    /** The status line of a GET of {@code path} (the connection is closed after it, whatever follows). */
    private static String statusLine(URI uri, String path) throws IOException {
        try (Socket s = new Socket(uri.getHost(), uri.getPort())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(ascii("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"));
            StringBuilder line = new StringBuilder();
            InputStream in = s.getInputStream();
            for (int c; (c = in.read()) != -1 && c != '\r'; ) {
                line.append((char) c);
            }
            return line.toString();
        }
    }

    /** Whether the server closed {@code socket} within a few deadlines (after whatever it answered). */
    private static boolean closedByServer(Socket socket) throws IOException {
        socket.setSoTimeout((int) DEADLINE.toMillis() * 5);
        InputStream in = socket.getInputStream();
        byte[] answer = new byte[64 << 10];
        try {
            while (in.read(answer) != -1) {
                // the answer, if any: megabytes of a transfer's, which the socket's buffers held
            }
            return true;
        } catch (SocketException reset) {
            return true;
        } catch (SocketTimeoutException open) {
            return false;
        }
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
