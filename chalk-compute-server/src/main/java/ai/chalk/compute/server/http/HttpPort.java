package ai.chalk.compute.server.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Supplier;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import org.jspecify.annotations.Nullable;

/**
 * The server's HTTP port (the JDK's own HTTP server: a few small documents and streamed transfers, no framework
 * needed). Routes are registered before clients are told the URL; anything else answers 404 or 405. An exchange must be
 * done within {@link ExchangeThreads#DEADLINE}, or its connection is closed, unless its handler grants it more
 * ({@link #granted()}), and then as long as its bytes move ({@link #progressed()}); granted exchanges leave
 * {@link ExchangeThreads#KEPT_FOR_OTHERS} threads to the rest. It keeps at most {@value #DEFAULT_MAX_CONNECTIONS}
 * connections open (the JDK's
 * {@code -Djdk.httpserver.maxConnections}, which it reads once per JVM: an application that opened a JDK HTTP server of
 * its own before this port keeps the limit it had, and its servers opened after share this one's; JDK 17.0.5 or later
 * reads it), none per address: the JDK's server has no such share.
 */
public final class HttpPort implements AutoCloseable {

    /** Requests served at once; more wait for a thread. */
    static final int MAX_CONCURRENT_EXCHANGES = 16;

    /**
     * The JVM-wide system property the JDK's server reads, once, for the most connections it keeps open (none by
     * default): each holds a file descriptor, and a peer without credentials opening connections in a loop ran the
     * server out of them (a sandbox's exec, an upload, a gRPC client then failed). A connection past it is closed as
     * soon as it is accepted; one that sends no request is closed by the JDK's server after 30 to 40 s (its idle timer).
     */
    static final String MAX_CONNECTIONS_PROPERTY = "jdk.httpserver.maxConnections";

    /** The default of {@link #MAX_CONNECTIONS_PROPERTY}: an eighth of the gRPC port's, well within the descriptors. */
    static final int DEFAULT_MAX_CONNECTIONS = 1_024;

    /**
     * Connections the kernel completes before the JDK's server accepts them (its accept loop takes one at a time): a
     * full queue drops new connections' first packets, which their clients send again only a second or more later.
     */
    private static final int BACKLOG = 1_024;

    static {
        // read when the JDK's server is first used, so before any port opens; a value the JVM was given is kept
        if (System.getProperty(MAX_CONNECTIONS_PROPERTY) == null) {
            System.setProperty(MAX_CONNECTIONS_PROPERTY, Integer.toString(DEFAULT_MAX_CONNECTIONS));
        }
    }

    private final HttpServer server;
    private final ExchangeThreads threads;
    private final String url;

    private HttpPort(HttpServer server, ExchangeThreads threads, String url) {
        this.server = server;
        this.threads = threads;
        this.url = url;
    }

    /**
     * Listens on {@code host:port} (0 picks a free port).
     *
     * @throws IOException when the port cannot be bound, naming it
     */
    public static HttpPort open(String host, int port) throws IOException {
        return open(host, port, (SSLContext) null);
    }

    /**
     * Listens on {@code host:port} (0 picks a free port), over TLS with {@code tls} when it is given: a server whose
     * gRPC port has TLS serves its signed links, the files they move and its token keys the same way, so that none
     * of them crosses the network readable or can be changed on the way.
     *
     * @throws IOException when the port cannot be bound, naming it
     */
    public static HttpPort open(String host, int port, @Nullable SSLContext tls) throws IOException {
        return open(host, port, ExchangeThreads.DEADLINE, ExchangeThreads.STALL, tls);
    }

    /** Listens on {@code host:port}, closing connections whose exchanges take longer than {@code deadline}. */
    static HttpPort open(String host, int port, Duration deadline) throws IOException {
        return open(host, port, deadline, ExchangeThreads.STALL, null);
    }

    /** As {@link #open(String, int, Duration)}, cutting granted exchanges whose bytes stand still for {@code stall}. */
    static HttpPort open(String host, int port, Duration deadline, Duration stall) throws IOException {
        return open(host, port, deadline, stall, null);
    }

    /**
     * The TLS context of the certificate chain and private key (PEM, the key PKCS#8) the gRPC port serves, read as
     * gRPC reads them.
     *
     * @throws IOException when they cannot be read, naming the files
     */
    public static SSLContext tls(Path certChain, Path privateKey) throws IOException {
        try {
            return ((JdkSslContext) SslContextBuilder.forServer(certChain.toFile(), privateKey.toFile())
                            .sslProvider(SslProvider.JDK)
                            .build())
                    .context();
        } catch (SSLException | IllegalArgumentException e) {
            throw new IOException(
                    "cannot read the TLS certificate " + certChain + " and key " + privateKey + ": " + e.getMessage(),
                    e);
        }
    }

    /** As {@link #open(String, int, Duration, Duration)}, over TLS with {@code tls} when it is given. */
    static HttpPort open(String host, int port, Duration deadline, Duration stall, @Nullable SSLContext tls)
            throws IOException {
        HttpServer server;
        try {
            InetSocketAddress address = new InetSocketAddress(InetAddress.getByName(host), port);
            if (tls != null) {
                HttpsServer https = HttpsServer.create(address, BACKLOG);
                https.setHttpsConfigurator(new HttpsConfigurator(tls));
                server = https;
            } else {
                server = HttpServer.create(address, BACKLOG);
            }
        } catch (IOException e) {
            throw new IOException(
                    "cannot listen for HTTP on " + host + ":" + port + ": " + e.getMessage()
                            + " (choose another with --http-port)",
                    e);
        }
        // transfers hold a thread for as long as their bytes flow: enough for several at once, each with a fixed buffer
        ExchangeThreads threads = new ExchangeThreads(MAX_CONCURRENT_EXCHANGES, deadline, stall);
        server.setExecutor(threads);
        // the address links name: a wildcard bind is reached at loopback here (as the gRPC URL shown says)
        String reached = host.equals("0.0.0.0") || host.equals("::") ? "127.0.0.1" : host;
        String shown = reached.contains(":") ? "[" + reached + "]" : reached;
        HttpPort opened = new HttpPort(
                server,
                threads,
                (tls != null ? "https://" : "http://") + shown + ":"
                        + server.getAddress().getPort());
        server.createContext("/", exchange -> send(exchange, 404, "text/plain", "not found\n"));
        server.start();
        return opened;
    }

    /**
     * The exchange the calling handler serves is one its caller was granted (a signed link checked): it has all the
     * time its bytes take, where any other must be done within {@link ExchangeThreads#DEADLINE}.
     *
     * @throws IOException when the deadline cut it first
     */
    void granted() throws IOException {
        threads.granted();
    }

    /** The granted exchange the calling handler serves moved bytes (see {@link ExchangeThreads#STALL}). */
    void progressed() {
        threads.progressed();
    }

    /** The base URL, e.g. {@code http://127.0.0.1:50052} ({@code https} over TLS). */
    public String url() {
        return url;
    }

    /** Serves the document {@code body} supplies (read at every request) at {@code path}. */
    public void document(String path, String contentType, Supplier<String> body) {
        server.createContext(path, exchange -> {
            if (!exchange.getRequestURI().getPath().equals(path)) {
                send(exchange, 404, "text/plain", "not found\n");
            } else if (!exchange.getRequestMethod().equals("GET")
                    && !exchange.getRequestMethod().equals("HEAD")) {
                exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                send(exchange, 405, "text/plain", "only GET is served here\n");
            } else {
                exchange.getResponseHeaders().set("Cache-Control", "max-age=300");
                send(exchange, 200, contentType, body.get());
            }
        });
    }

    /**
     * Hands the requests under {@code prefix} to {@code handler}, which answers each one (and closes the exchange).
     */
    public void route(String prefix, HttpHandler handler) {
        server.createContext(prefix, handler);
    }

    static void send(HttpExchange exchange, int status, String contentType, String body) throws IOException {
        try (exchange) {
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", contentType);
            boolean head = exchange.getRequestMethod().equals("HEAD");
            exchange.sendResponseHeaders(status, head ? -1 : bytes.length);
            if (!head) {
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(bytes);
                }
            }
        }
    }

    @Override
    public void close() {
        server.stop(0);
        threads.close();
    }
}
