package ai.chalk.compute.server.egress;

import ai.chalk.compute.server.threads.DaemonThreads;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.dns.DatagramDnsQueryDecoder;
import io.netty.handler.codec.dns.DatagramDnsResponseEncoder;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import org.jspecify.annotations.Nullable;

/**
 * The server's egress proxy: one per runtime, serving every sandbox that has a network policy on an address of its own
 * ({@link #open}), the only address such a sandbox can reach. On it: an HTTP proxy with CONNECT on
 * {@value #PROXY_PORT} (named by the sandbox's {@code HTTP_PROXY} variables), the same for clients that ignore them on
 * {@value #HTTP_PORT} and {@value #HTTPS_PORT} (the resolver sends allowed names there), and the resolver on UDP
 * {@value #DNS_PORT}. Which sandbox a connection belongs to is known by the address it reached, never by anything the
 * sandbox says.
 *
 * <p>Everything runs on a few event-loop threads; name lookups block on threads of their own.
 */
public final class EgressProxy implements AutoCloseable {

    public static final int PROXY_PORT = 3128;
    public static final int HTTP_PORT = 80;
    public static final int HTTPS_PORT = 443;
    public static final int DNS_PORT = 53;
    /** A connection with no traffic either way for this long is closed. */
    static final long IDLE_SECONDS = 600;
    /**
     * Intercepted hosts whose certificate and TLS context are kept, the least recently used going first: a sandbox
     * whose policy intercepts a wildcard could otherwise name a new host in every handshake and grow the server's heap
     * without end. A host that comes back after that gets a new certificate.
     */
    static final int INTERCEPTED_HOSTS = 512;
    /**
     * Send and receive buffer of the proxy's side of a sandbox's connection: the sandbox is next door (no latency to
     * cover), so a small fixed buffer costs no speed, where the kernel's own sizing lets it grow to megabytes.
     */
    static final int SANDBOX_SIDE_BUFFER = 128 << 10;
    /**
     * Send and receive buffer of the proxy's connection to a destination: fixed, so that a sandbox that reads nothing
     * of a download holds this much of the host's TCP memory rather than megabytes a connection. The window the kernel
     * advertises from it is about 0.5 MiB: about 5 MB/s a connection 100 ms from the destination, 25 MB/s at 20 ms.
     */
    static final int UPSTREAM_BUFFER = 512 << 10;
    /** Threads that block on name lookups, for all sandboxes; lookups past them wait in a bounded queue. */
    static final int LOOKUP_THREADS = 64;
    /** Lookups waiting for a thread, at most; past that a lookup fails at once as busy (SERVFAIL, 503). */
    static final int LOOKUP_QUEUE = 4096;

    private final EventLoopGroup group;
    private final ExecutorService lookups;
    private final EgressCa ca;
    private final Path trustDir;
    private final Destinations destinations;
    private final SslContext upstream;
    private final Map<String, SslContext> intercepts = LeastRecentlyUsed.map(INTERCEPTED_HOSTS);
    private final EgressConnections limits;
    /** Connections held now, every sandbox's. */
    private final AtomicInteger open = new AtomicInteger();

    private EgressProxy(Path dir, EgressOptions options, List<String> forbidden, @Nullable Executor resolver)
            throws IOException {
        this.ca = EgressCa.loadOrCreate(dir.resolve("ca"));
        this.limits = options.connections();
        this.trustDir = SandboxTrust.write(dir.resolve("trust"), ca);
        this.upstream = upstreamContext(options);
        ThreadPoolExecutor pool = new ThreadPoolExecutor(
                LOOKUP_THREADS,
                LOOKUP_THREADS,
                30,
                TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(LOOKUP_QUEUE),
                DaemonThreads.numbered("chalk-egress-dns"));
        pool.allowCoreThreadTimeOut(true);
        this.lookups = pool;
        this.destinations = new Destinations(options.hosts(), forbidden, resolver != null ? resolver : lookups);
        int threads = Math.max(2, Math.min(4, Runtime.getRuntime().availableProcessors()));
        this.group = new MultiThreadIoEventLoopGroup(
                threads, DaemonThreads.numbered("chalk-egress"), NioIoHandler.newFactory());
    }

    /**
     * Starts the proxy: its CA (made in {@code <dir>/ca} the first time, readable by the server only) and what
     * sandboxes trust ({@code <dir>/trust}, see {@link SandboxTrust}).
     *
     * @param forbidden prefixes no sandbox may reach besides the host's own addresses (the sandboxes' links)
     */
    public static EgressProxy start(Path dir, EgressOptions options, List<String> forbidden) throws IOException {
        return new EgressProxy(dir, options, forbidden, null);
    }

    /**
     * A proxy whose name lookups run on {@code resolver} instead of its own lookup threads: for tests that need a
     * resolver that does not answer yet, which the host's does not provide.
     */
    static EgressProxy startWithResolver(Path dir, EgressOptions options, Executor resolver) throws IOException {
        return new EgressProxy(dir, options, List.of(), resolver);
    }

    /** The directory bound read-only into sandboxes at {@link SandboxTrust#MOUNT}. */
    public Path trustDir() {
        return trustDir;
    }

    /** The CA intercepted hosts' certificates are issued by. */
    public X509Certificate caCertificate() {
        return ca.certificate();
    }

    /**
     * Serves sandbox {@code sandboxId} on {@code address}, which must be an address of this host on the sandbox's only
     * link. Close the endpoint when the sandbox ends.
     *
     * @throws IOException when a port cannot be bound there
     */
    public EgressEndpoint open(String sandboxId, InetAddress address, EgressPolicy policy) throws IOException {
        SandboxLink link = new SandboxLink(sandboxId, policy, address, this);
        ChannelGroup children = new DefaultChannelGroup("egress-" + sandboxId, GlobalEventExecutor.INSTANCE);
        List<Channel> bound = new ArrayList<>();
        try {
            bound.add(listen(
                    link,
                    PROXY_PORT,
                    children,
                    ch -> ch.pipeline().addLast(new HttpServerCodec(), new HttpFront(link, HttpFront.Mode.PROXY))));
            bound.add(listen(
                    link,
                    HTTP_PORT,
                    children,
                    ch -> ch.pipeline()
                            .addLast(new HttpServerCodec(), new HttpFront(link, HttpFront.Mode.TRANSPARENT))));
            bound.add(listen(
                    link,
                    HTTPS_PORT,
                    children,
                    ch -> ch.pipeline().addLast(new TlsGate(link, null, HTTPS_PORT, null))));
            bound.add(resolver(address, link));
        } catch (IOException | RuntimeException e) {
            bound.forEach(Channel::close);
            throw e;
        }
        return new EgressEndpoint(sandboxId, address, bound, children);
    }

    private Channel listen(
            SandboxLink link, int port, ChannelGroup children, java.util.function.Consumer<Channel> pipeline)
            throws IOException {
        InetAddress address = link.proxyAddress();
        ServerBootstrap b = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                .option(ChannelOption.SO_RCVBUF, SANDBOX_SIDE_BUFFER) // what accepted connections start with
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.SO_RCVBUF, SANDBOX_SIDE_BUFFER)
                .childOption(ChannelOption.SO_SNDBUF, SANDBOX_SIDE_BUFFER)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (!admit(ch, link)) {
                            ch.close();
                            return;
                        }
                        children.add(ch);
                        ch.pipeline().addLast(new IdleStateHandler(0, 0, IDLE_SECONDS, TimeUnit.SECONDS));
                        ch.pipeline().addLast(new IdleClose());
                        pipeline.accept(ch);
                    }
                });
        return bind(b.bind(new InetSocketAddress(address, port)), address, port, "TCP");
    }

    /**
     * Whether {@code ch} may be held: within its sandbox's share of connections, and within all of them unless the
     * sandbox holds fewer than {@link EgressConnections#GUARANTEED}.
     */
    private boolean admit(Channel ch, SandboxLink link) {
        int sandboxs = link.connectionOpened();
        if (sandboxs > limits.perSandbox()) {
            link.connectionClosed();
            link.refusedConnection("the sandbox holds " + limits.perSandbox() + " already, the most it may");
            return false;
        }
        if (open.incrementAndGet() > limits.total() && sandboxs > EgressConnections.GUARANTEED) {
            open.decrementAndGet();
            link.connectionClosed();
            link.refusedConnection("the proxy holds " + limits.total() + " for all sandboxes, the most it may");
            return false;
        }
        ch.closeFuture().addListener(f -> {
            open.decrementAndGet();
            link.connectionClosed();
        });
        return true;
    }

    /** Connections held now, every sandbox's. */
    int connections() {
        return open.get();
    }

    /** Intercepted hosts whose TLS context is kept now. */
    int interceptedHosts() {
        return intercepts.size();
    }

    private Channel resolver(InetAddress address, SandboxLink link) throws IOException {
        Bootstrap b = new Bootstrap()
                .group(group)
                .channel(NioDatagramChannel.class)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline()
                                .addLast(
                                        new DatagramDnsQueryDecoder(),
                                        new DatagramDnsResponseEncoder(),
                                        new DnsAnswers(link));
                    }
                });
        return bind(b.bind(new InetSocketAddress(address, DNS_PORT)), address, DNS_PORT, "UDP");
    }

    private static Channel bind(io.netty.channel.ChannelFuture f, InetAddress address, int port, String proto)
            throws IOException {
        f.awaitUninterruptibly();
        if (!f.isSuccess()) {
            throw new IOException(
                    "the egress proxy cannot listen on " + proto + " " + address.getHostAddress() + " port " + port
                            + ": " + f.cause().getMessage(),
                    f.cause());
        }
        return f.channel();
    }

    Destinations destinations() {
        return destinations;
    }

    SslContext upstreamContext() {
        return upstream;
    }

    SslContext interceptContext(String host) {
        // made outside the map's lock: a new host costs a key pair, a signature and a context, and every event loop
        // of every sandbox would wait on it
        SslContext known = intercepts.get(host);
        if (known != null) {
            return known;
        }
        EgressCa.Issued issued = ca.issue(host);
        SslContext fresh;
        try {
            fresh = SslContextBuilder.forServer(issued.key(), issued.chain())
                    .protocols("TLSv1.3", "TLSv1.2")
                    .build();
        } catch (SSLException e) {
            throw new IllegalStateException("cannot serve TLS for " + host + ": " + e.getMessage(), e);
        }
        SslContext raced = intercepts.putIfAbsent(host, fresh);
        return raced != null ? raced : fresh;
    }

    private static SslContext upstreamContext(EgressOptions options) throws IOException {
        try {
            TrustManagerFactory jdk = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            jdk.init((KeyStore) null);
            List<X509Certificate> trusted = new ArrayList<>();
            for (var m : jdk.getTrustManagers()) {
                if (m instanceof X509TrustManager x) {
                    trusted.addAll(List.of(x.getAcceptedIssuers()));
                }
            }
            if (options.upstreamTrust().isPresent()) {
                try (InputStream in =
                        Files.newInputStream(options.upstreamTrust().get())) {
                    for (var c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                        trusted.add((X509Certificate) c);
                    }
                }
            }
            return SslContextBuilder.forClient()
                    .trustManager(trusted)
                    .endpointIdentificationAlgorithm("HTTPS")
                    .protocols("TLSv1.3", "TLSv1.2")
                    .build();
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot set up the egress proxy's TLS to destinations: " + e.getMessage(), e);
        }
    }

    /** Stops serving every sandbox. */
    @Override
    public void close() {
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        lookups.shutdownNow();
    }

    /** Closes a connection idle for {@value #IDLE_SECONDS} s. */
    private static final class IdleClose extends io.netty.channel.ChannelDuplexHandler {
        @Override
        public void userEventTriggered(io.netty.channel.ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof io.netty.handler.timeout.IdleStateEvent) {
                ctx.close();
            } else {
                ctx.fireUserEventTriggered(evt);
            }
        }
    }
}
