package ai.chalk.compute.server;

import ai.chalk.compute.server.auth.Authentication;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.auth.TrustedCallers;
import ai.chalk.compute.server.grpc.CallsInFlight;
import ai.chalk.compute.server.grpc.ListenAddress;
import ai.chalk.compute.server.grpc.MalformedRequests;
import ai.chalk.compute.server.grpc.OpenConnections;
import ai.chalk.compute.server.grpc.PeerAddress;
import ai.chalk.compute.server.grpc.UnfinishedRequests;
import ai.chalk.compute.server.grpc.UnsentAnswers;
import ai.chalk.compute.server.http.HttpPort;
import ai.chalk.compute.server.http.Transfers;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a {@link ComputeServer} is reached: in-process always (every caller trusted as embedded), over TCP when given a
 * port (optionally TLS; callers as {@link Authentication#tcpCallers()} says), its HTTP port (the JWKS), and the
 * replicas' socket (callers by their workload token). The services are the server's; this class only carries them.
 *
 * <p>Stopping is in two halves so the server can stop what runs behind the services in between: {@link #shutdown()}
 * refuses new calls, {@link #close()} waits briefly for the calls under way and closes the HTTP port. The replicas'
 * socket is shut down with the function services that own it.
 */
final class Transports {

    /** The server's own logger: its warnings read as they always have. */
    private static final Logger log = LoggerFactory.getLogger(ComputeServer.class);

    private final String inProcessName;
    private final String host;
    private final @Nullable Integer port;
    private final @Nullable Integer httpPort;
    private final @Nullable Path tlsCertChain;
    private final @Nullable Path tlsPrivateKey;
    private final Authentication.Mode auth;
    private final Optional<String> exposure;
    private final OpenConnections connections;
    private EventLoopGroup[] tcpLoops = {};
    private @Nullable Server inProcess;
    private @Nullable Server tcp;
    private @Nullable HttpPort http;

    /**
     * The transports with these settings, not yet serving; {@code port} and {@code httpPort} may be null (no TCP; the
     * default HTTP port), {@code tlsCertChain} and {@code tlsPrivateKey} null (no TLS).
     *
     * @throws IllegalArgumentException when the TCP address may not be served in this mode (no authentication off
     *                                  loopback)
     */
    Transports(
            String inProcessName,
            String host,
            @Nullable Integer port,
            @Nullable Integer httpPort,
            @Nullable Path tlsCertChain,
            @Nullable Path tlsPrivateKey,
            Authentication.Mode auth,
            OpenConnections connections) {
        this.inProcessName = inProcessName;
        this.host = host;
        this.port = port;
        this.httpPort = httpPort;
        this.tlsCertChain = tlsCertChain;
        this.tlsPrivateKey = tlsPrivateKey;
        this.auth = auth;
        this.connections = connections;
        this.exposure = port == null
                ? Optional.empty()
                : ListenAddress.check(host, port, auth == Authentication.Mode.TOKENS, tlsCertChain != null);
    }

    /**
     * Serves {@code services} in-process and over TCP (each guarded against malformed requests), opens the HTTP port
     * with what {@code authentication} publishes and the signed {@code transfers}, and serves the services unguarded to the replicas.
     */
    void start(
            List<ServerServiceDefinition> services,
            Authentication authentication,
            FunctionServices functions,
            Transfers transfers,
            ServerStreamTracer.Factory received,
            ServerStreamTracer.Factory receivedFromReplicas,
            CallsInFlight inFlight,
            UnsentAnswers unsent)
            throws IOException {
        List<ServerServiceDefinition> guarded =
                services.stream().map(MalformedRequests::guard).toList();
        ServerInterceptor unfinished = new UnfinishedRequests();
        InProcessServerBuilder ipb =
                InProcessServerBuilder.forName(inProcessName).maxInboundMessageSize(ComputeServer.MAX_MESSAGE_BYTES);
        ServerInterceptor embedded = new TrustedCallers(Caller.Kind.EMBEDDED);
        guarded.forEach(service -> ipb.addService(ServerInterceptors.intercept(service, embedded)));
        inProcess = ipb.build().start();
        if (port != null) {
            NettyServerBuilder nb = NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
                    .maxInboundMessageSize(ComputeServer.MAX_MESSAGE_BYTES)
                    .decompressorRegistry(ComputeServer.NO_DECOMPRESSION)
                    .addStreamTracerFactory(received)
                    .addTransportFilter(PeerAddress.KEEPER);
            tcpLoops = connections.applyTo(nb);
            if (tlsCertChain != null) {
                nb.useTransportSecurity(tlsCertChain.toFile(), tlsPrivateKey.toFile());
            }
            ServerInterceptor callers = authentication.tcpCallers();
            // the caller first (the last interceptor runs first), then its environment's calls under way are counted,
            // then the answers they have not read
            guarded.forEach(service ->
                    nb.addService(ServerInterceptors.intercept(service, unfinished, unsent, inFlight, callers)));
            try {
                tcp = nb.build().start();
            } catch (IOException | RuntimeException e) {
                OpenConnections.shutdown(tcpLoops); // the port is taken, say: nothing will use them
                throw e;
            }
            exposure.ifPresent(warning -> log.warn(warning.replace(":" + port + " ", ":" + tcp.getPort() + " ")));
        }
        String httpHost = tcp != null ? host : "127.0.0.1";
        int boundHttpPort = httpPort != null ? httpPort : tcp != null && port != 0 ? tcp.getPort() + 1 : 0;
        http = HttpPort.open(
                httpHost,
                boundHttpPort,
                tcp != null && tlsCertChain != null ? HttpPort.tls(tlsCertChain, tlsPrivateKey) : null);
        transfers.serveOn(http);
        authentication.publish(http, grpcUrl());
        if (tcp != null) {
            authentication.firstCredential();
        }
        // whatever the server's mode: the socket is shared by every replica of every environment, and a replica's
        // token (rotated in its identity directory) says which function, and so which environment, calls
        ServerInterceptor workers = authentication.workloadCallers();
        functions.serveWorkers(
                services.stream()
                        .map(s -> ServerInterceptors.intercept(s, unfinished, unsent, inFlight, workers))
                        .toList(),
                ComputeServer.MAX_MESSAGE_BYTES,
                receivedFromReplicas);
    }

    /** The TCP port, once it listens. */
    OptionalInt port() {
        return tcp == null ? OptionalInt.empty() : OptionalInt.of(tcp.getPort());
    }

    /** The URL TCP clients use, once it listens. */
    Optional<String> grpcUrl() {
        if (tcp == null) {
            return Optional.empty();
        }
        String shown = host.equals("0.0.0.0") || host.equals("::") ? "127.0.0.1" : host;
        return Optional.of((tlsCertChain != null ? "https://" : "http://")
                + (shown.contains(":") ? "[" + shown + "]" : shown) + ":" + tcp.getPort());
    }

    String httpUrl() {
        return http.url();
    }

    /** Where the server is reached, for its start line. */
    String describe() {
        return tcp != null
                ? "listening on " + host + ":" + tcp.getPort() + (tlsCertChain != null ? " (TLS)" : "")
                        + (auth == Authentication.Mode.NONE ? " without authentication" : "")
                        + ", HTTP on " + http.url() + " and in-process as " + inProcessName
                : "in-process as " + inProcessName;
    }

    /** Refuses new calls on the in-process and TCP servers; the calls under way go on. */
    void shutdown() {
        for (Server s : new Server[] {tcp, inProcess}) {
            if (s != null) {
                s.shutdown();
            }
        }
    }

    /** Gives the calls under way two seconds each to end, cancels the rest, and closes the HTTP port. */
    void close() {
        for (Server s : new Server[] {tcp, inProcess}) {
            if (s != null) {
                try {
                    if (!s.awaitTermination(2, TimeUnit.SECONDS)) {
                        s.shutdownNow();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    s.shutdownNow();
                }
            }
        }
        OpenConnections.shutdown(tcpLoops);
        if (http != null) {
            http.close();
        }
    }
}
