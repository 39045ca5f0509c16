package ai.chalk.compute.server.egress;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.ssl.AbstractSniHandler;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.util.Optional;

/**
 * The first bytes of a tunnel (after a CONNECT, or on the proxy's port 443): a TLS client hello whose server name
 * (SNI) the policy allows, or the connection is closed. The name must be the CONNECT's host (a client cannot ask for
 * an allowed host and then greet another); on port 443 it is the destination itself. An allowed host without rules is
 * then tunnelled untouched, client hello included; one with rules is intercepted: TLS ends here with a certificate of
 * the server's CA and {@link HttpFront} takes the requests. Only a CONNECT to an IP literal that an allowed route
 * covers may carry something else than TLS (a database protocol, say): routes are about addresses, not names.
 */
final class TlsGate extends AbstractSniHandler<TlsGate.Way> {

    /** How the tunnel continues. */
    sealed interface Way {}

    /** Bytes both ways to the connected destination. */
    record Tunnel(Channel upstream) implements Way {}

    /** TLS terminated here for {@code host}. */
    record Intercept(String host, Decision decision) implements Way {}

    private final SandboxLink link;
    /** The CONNECT's host and its decision; null host on the proxy's port 443, where the SNI decides. */
    private final String connectHost;

    private final int port;
    private final Decision connectDecision;

    TlsGate(SandboxLink link, String connectHost, int port, Decision connectDecision) {
        super(16 * 1024, 10_000);
        this.link = link;
        this.connectHost = connectHost;
        this.port = port;
        this.connectDecision = connectDecision;
    }

    @Override
    protected Future<Way> lookup(ChannelHandlerContext ctx, String sni) {
        Promise<Way> way = ctx.executor().newPromise();
        String what = (connectHost != null ? "CONNECT " + RequestRewrite.hostHeader(connectHost, port, false) : "TLS")
                + (sni == null ? " without a server name" : " to server name " + sni);
        if (sni == null) {
            boolean routedLiteral = connectHost != null
                    && Destinations.isLiteral(connectHost)
                    && connectDecision.entry().isEmpty();
            if (!routedLiteral) {
                link.refused(what, "the TLS client hello names no server (or this is not TLS)");
                return way.setFailure(new IllegalStateException("no SNI"));
            }
            return tunnel(ctx, connectDecision, way);
        }
        String name = HostPattern.normalize(sni);
        if (connectHost != null) {
            if (!name.equals(HostPattern.normalize(connectHost))) {
                link.refused(what, "the TLS server name differs from the CONNECT host");
                return way.setFailure(new IllegalStateException("SNI mismatch"));
            }
            return proceed(ctx, name, connectDecision, way);
        }
        link.decide(name, port)
                .whenComplete((d, failure) -> ctx.executor().execute(() -> {
                    if (failure != null || !d.allowed()) {
                        SandboxLookups.Busy busy = SandboxLookups.Busy.in(failure);
                        link.refused(
                                what,
                                busy != null
                                        ? busy.getMessage()
                                        : failure != null ? "the name could not be resolved" : d.reason());
                        way.tryFailure(new IllegalStateException("refused"));
                        return;
                    }
                    proceed(ctx, name, d, way);
                }));
        return way;
    }

    private Promise<Way> proceed(ChannelHandlerContext ctx, String name, Decision d, Promise<Way> way) {
        if (d.intercepted()) {
            link.allowed("TLS to " + name + " (intercepted)");
            return way.setSuccess(new Intercept(name, d));
        }
        link.allowed("TLS to " + name + " (tunnelled)");
        return tunnel(ctx, d, way);
    }

    private Promise<Way> tunnel(ChannelHandlerContext ctx, Decision d, Promise<Way> way) {
        Promise<Channel> connected = ctx.executor().newPromise();
        Upstream.connect(ctx.channel().eventLoop(), d.addresses(), port, ch -> {}, connected);
        connected.addListener(f -> {
            if (f.isSuccess()) {
                if (!way.trySuccess(new Tunnel(connected.getNow()))) {
                    connected.getNow().close();
                }
            } else {
                link.refused("TLS tunnel", "cannot connect: " + f.cause().getMessage());
                way.tryFailure(f.cause());
            }
        });
        return way;
    }

    @Override
    protected void onLookupComplete(ChannelHandlerContext ctx, String sni, Future<Way> future) {
        if (!future.isSuccess()) {
            ctx.close(); // a refusal outside HTTP: the connection closes
            return;
        }
        Way way = future.getNow();
        if (way instanceof Tunnel t) {
            Channel up = t.upstream();
            if (!ctx.channel().isActive()) {
                up.close();
                return;
            }
            up.pipeline().addLast(new Relay(ctx.channel()));
            ctx.pipeline().replace(this, "relay", new Relay(up));
            up.config().setAutoRead(true);
        } else if (way instanceof Intercept i) {
            // the codec first, so that the decrypted bytes find it when the client hello reaches the TLS handler
            ctx.pipeline().addAfter(ctx.name(), "http", new HttpServerCodec());
            ctx.pipeline()
                    .addAfter(
                            "http",
                            "front",
                            new HttpFront(link, HttpFront.Mode.INTERCEPTED, i.host(), port, i.decision()));
            ctx.pipeline().replace(this, "tls", link.interceptContext(i.host()).newHandler(ctx.alloc()));
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        link.refused(
                "TLS",
                Optional.ofNullable(cause.getMessage()).orElse(cause.getClass().getSimpleName()));
        ctx.close();
    }
}
