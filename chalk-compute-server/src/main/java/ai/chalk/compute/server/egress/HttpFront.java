package ai.chalk.compute.server.egress;

import ai.chalk.compute.server.regex.DeadlineCharSequence;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Promise;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;

/**
 * The HTTP side of a sandbox's connection, one request at a time: where it goes (the absolute URI of a proxy request,
 * {@code http://} or {@code https://}, the latter then over TLS from the proxy on,
 * the {@code Host} of a request sent straight to the proxy's port 80, or the host of an intercepted TLS connection),
 * whether the policy allows it (403 naming the policy when not), the host's rules applied ({@link RequestRewrite}),
 * and the request streamed to the destination and its response back, over a connection kept for the next request to
 * the same place. On the proxy port a {@code CONNECT} turns the connection into a tunnel checked by {@link TlsGate}.
 */
final class HttpFront extends ChannelInboundHandlerAdapter {

    /** Where the connection came in. */
    enum Mode {
        /** The proxy port: absolute URIs and CONNECT. */
        PROXY,
        /** Port 80 of the proxy's address, reached by a name the resolver answered: origin-form with Host. */
        TRANSPARENT,
        /** Decrypted TLS of an intercepted host: origin-form, the host fixed by the TLS client hello. */
        INTERCEPTED
    }

    private enum State {
        IDLE,
        DECIDING,
        STREAMING,
        AWAITING_RESPONSE,
        CLOSED
    }

    private final SandboxLink link;
    private final Mode mode;
    /** For {@link Mode#INTERCEPTED}: the host and port of the TLS connection, and the decision that allowed it. */
    private final String tlsHost;

    private final int tlsPort;
    private final Decision tlsDecision;

    private final ArrayDeque<HttpObject> inbox = new ArrayDeque<>();
    private State state = State.IDLE;
    private ChannelHandlerContext ctx;
    private Channel upstream;
    private String upstreamKey;
    private boolean closeAfterResponse;
    private boolean first = true;

    HttpFront(SandboxLink link, Mode mode) {
        this(link, mode, null, -1, null);
    }

    HttpFront(SandboxLink link, Mode mode, String tlsHost, int tlsPort, Decision tlsDecision) {
        this.link = link;
        this.mode = mode;
        this.tlsHost = tlsHost;
        this.tlsPort = tlsPort;
        this.tlsDecision = tlsDecision;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof HttpObject o) || state == State.CLOSED) {
            ReferenceCountUtil.release(msg);
            return;
        }
        inbox.add(o);
        drain();
    }

    private void drain() {
        while (!inbox.isEmpty() && state != State.CLOSED) {
            switch (state) {
                case IDLE -> {
                    HttpObject o = inbox.poll();
                    if (o instanceof HttpRequest request) {
                        start(request);
                    } else {
                        ReferenceCountUtil.release(o); // the rest of a refused request
                    }
                }
                case STREAMING -> {
                    HttpObject o = inbox.poll();
                    upstream.write(o, upstream.voidPromise());
                    if (o instanceof LastHttpContent) {
                        upstream.flush();
                        state = State.AWAITING_RESPONSE;
                    }
                }
                default -> {
                    pauseUnlessReady();
                    return;
                }
            }
        }
        if (state == State.STREAMING) {
            upstream.flush();
        }
        pauseUnlessReady();
    }

    /** Reads on while the next message can be handled at once; a request waiting for its turn stops them. */
    private void pauseUnlessReady() {
        boolean read = state == State.IDLE || (state == State.STREAMING && upstream.isWritable());
        ctx.channel().config().setAutoRead(read && inbox.isEmpty());
    }

    private void start(HttpRequest request) {
        state = State.DECIDING;
        boolean wasFirst = first;
        first = false;
        if (request.decoderResult().isFailure()) {
            refuse(() -> Refusals.badRequest(ctx, link, "not a valid HTTP request"));
            return;
        }
        closeAfterResponse = !HttpUtil.isKeepAlive(request);
        if (mode == Mode.PROXY && request.method().equals(HttpMethod.CONNECT)) {
            if (!wasFirst) {
                refuse(() -> Refusals.badRequest(ctx, link, "CONNECT must be the first request of a connection"));
                return;
            }
            connect(request);
            return;
        }
        RequestRewrite.Target target;
        try {
            target = target(request);
        } catch (IllegalArgumentException e) {
            refuse(() -> Refusals.badRequest(ctx, link, e.getMessage()));
            return;
        }
        if (target == null) {
            return; // refused already
        }
        String what = request.method() + " " + (target.tls() ? "https://" : "http://")
                + RequestRewrite.hostHeader(target.host(), target.port(), target.tls()) + pathOf(request.uri());
        CompletableFuture<Decision> decision = mode == Mode.INTERCEPTED
                ? CompletableFuture.completedFuture(tlsDecision)
                : link.decide(target.host(), target.port());
        decision.whenComplete((d, failure) -> ctx.executor().execute(() -> {
            if (state == State.CLOSED) {
                ReferenceCountUtil.release(request);
                return;
            }
            if (failure != null || !d.allowed()) {
                ReferenceCountUtil.release(request);
                refuse(() -> Refusals.notDecided(
                        ctx, link, what, failure, failure != null ? "the name could not be resolved" : d.reason()));
                return;
            }
            forward(request, target, d, what);
        }));
    }

    /** Where a request goes, from the URI, the Host header or the TLS connection; null when refused already. */
    private RequestRewrite.Target target(HttpRequest request) {
        String uri = request.uri();
        if (uri.indexOf('#') >= 0) {
            // RFC 9112 3.2: no fragment in a request target; the rules' checks stop at one, a server may not
            throw new IllegalArgumentException("a request target with a fragment ('#')");
        }
        if (request.headers().getAll(HttpHeaderNames.HOST).size() > 1) {
            // RFC 9112 3.2: the Host checked is the first; a server reading the last would route the request, and the
            // credentials its rules add, to another of its sites
            throw new IllegalArgumentException("a request with more than one Host header");
        }
        switch (mode) {
            case PROXY -> {
                URI u;
                try {
                    u = new URI(uri);
                } catch (URISyntaxException e) {
                    throw new IllegalArgumentException("the request URI is malformed");
                }
                boolean tls = "https".equalsIgnoreCase(u.getScheme());
                if (!tls && !"http".equalsIgnoreCase(u.getScheme()) || u.getHost() == null) {
                    throw new IllegalArgumentException("a proxy request needs an absolute http:// or https:// URI");
                }
                String host = unbracket(u.getHost());
                int port = u.getPort() > 0 ? u.getPort() : tls ? 443 : 80;
                // RFC 9112 3.2.2: a proxy uses the request-target's authority, whatever Host says
                request.headers().set(HttpHeaderNames.HOST, RequestRewrite.hostHeader(host, port, tls));
                request.setUri(pathOf(uri));
                // an https:// URI sent to the proxy in the clear (busybox wget does so): TLS from the proxy on,
                // verified as for an intercepted host
                return new RequestRewrite.Target(tls, host, port, false);
            }
            case TRANSPARENT -> {
                String hostHeader = request.headers().get(HttpHeaderNames.HOST);
                if (hostHeader == null || hostHeader.isBlank()) {
                    throw new IllegalArgumentException("a request without a Host header");
                }
                HostPort hp = HostPort.parse(hostHeader.strip(), 80);
                request.setUri(pathOf(uri));
                return new RequestRewrite.Target(false, hp.host(), hp.port(), false);
            }
            default -> {
                String hostHeader = request.headers().get(HttpHeaderNames.HOST);
                if (hostHeader != null) {
                    HostPort hp = HostPort.parse(hostHeader.strip(), tlsPort);
                    if (!HostPattern.normalize(hp.host()).equals(HostPattern.normalize(tlsHost))) {
                        String what = request.method() + " https://" + tlsHost + pathOf(uri);
                        refuse(() -> Refusals.forbidden(
                                ctx,
                                link,
                                what,
                                "its Host header names " + hp.host() + ", but the TLS connection is to " + tlsHost));
                        ReferenceCountUtil.release(request);
                        return null;
                    }
                }
                request.setUri(pathOf(uri));
                return new RequestRewrite.Target(true, tlsHost, tlsPort, false);
            }
        }
    }

    private void forward(HttpRequest request, RequestRewrite.Target target, Decision d, String what) {
        // for the proxy only: never sent on, so nothing the rules would put into them counts
        request.headers().remove("proxy-connection");
        request.headers().remove(HttpHeaderNames.PROXY_AUTHORIZATION);
        RequestRewrite.Target to;
        try {
            to = RequestRewrite.apply(request, d.entry().map(HostEntry::rules).orElse(List.of()), target);
        } catch (IllegalArgumentException e) {
            ReferenceCountUtil.release(request);
            refuse(() -> Refusals.badGateway(ctx, "a header of the network policy's rules is not valid in HTTP"));
            return;
        } catch (RequestRewrite.InTheClear e) {
            ReferenceCountUtil.release(request);
            refuse(() -> Refusals.forbidden(ctx, link, what, e.reason()));
            return;
        } catch (DeadlineCharSequence.DeadlineExceeded e) {
            ReferenceCountUtil.release(request);
            refuse(() -> Refusals.forbidden(
                    ctx,
                    link,
                    what,
                    "the regexes of the network policy's rules took longer than "
                            + RequestRewrite.MATCH_BUDGET_NANOS / 1_000_000 + " ms to match this request"));
            return;
        }
        link.allowed(what);
        CompletableFuture<List<InetAddress>> where =
                to.forwarded() ? link.forwardTarget(to.host()) : CompletableFuture.completedFuture(d.addresses());
        where.whenComplete((addresses, failure) -> ctx.executor().execute(() -> {
            if (state == State.CLOSED) {
                ReferenceCountUtil.release(request);
                return;
            }
            if (failure != null || addresses.isEmpty()) {
                ReferenceCountUtil.release(request);
                refuse(() -> Refusals.notDecided(
                        ctx,
                        link,
                        what,
                        failure,
                        "its rule's forward_url host " + to.host()
                                + " does not resolve to an address a sandbox may reach"));
                return;
            }
            send(request, to, addresses);
        }));
    }

    private void send(HttpRequest request, RequestRewrite.Target to, List<InetAddress> addresses) {
        if (upstream != null && upstream.isActive() && to.key().equals(upstreamKey)) {
            writeRequest(request);
            return;
        }
        if (upstream != null) {
            upstream.close();
            upstream = null;
        }
        Promise<Channel> connected = ctx.executor().newPromise();
        Upstream.connect(
                ctx.channel().eventLoop(),
                addresses,
                to.port(),
                ch -> {
                    if (to.tls()) {
                        ch.pipeline().addLast(link.upstreamContext().newHandler(ch.alloc(), to.host(), to.port()));
                    }
                    ch.pipeline().addLast(new HttpClientCodec(), new Responses());
                },
                connected);
        connected.addListener(f -> {
            if (state == State.CLOSED) {
                ReferenceCountUtil.release(request);
                if (f.isSuccess()) {
                    connected.getNow().close();
                }
                return;
            }
            if (!f.isSuccess()) {
                ReferenceCountUtil.release(request);
                refuse(() -> Refusals.badGateway(
                        ctx,
                        "cannot connect to " + to.host() + " port " + to.port() + ": "
                                + f.cause().getMessage()));
                return;
            }
            upstream = connected.getNow();
            upstreamKey = to.key();
            upstream.config().setAutoRead(true);
            writeRequest(request);
        });
    }

    private void writeRequest(HttpRequest request) {
        state = State.STREAMING;
        upstream.write(request, upstream.voidPromise());
        drain();
    }

    /** The path and query of a URI in any form ({@code /p?q} of {@code http://h/p?q}); {@code /} when it has none. */
    static String pathOf(String uri) {
        if (uri.startsWith("/") || uri.equals("*")) {
            return uri;
        }
        int scheme = uri.indexOf("://");
        if (scheme < 0) {
            return "/" + uri;
        }
        int slash = uri.indexOf('/', scheme + 3);
        int question = uri.indexOf('?', scheme + 3);
        if (slash < 0 && question < 0) {
            return "/";
        }
        if (slash < 0 || (question >= 0 && question < slash)) {
            return "/" + uri.substring(question);
        }
        return uri.substring(slash);
    }

    private static String unbracket(String host) {
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }

    /** A CONNECT: the tunnel is decided here, then checked at its first bytes by {@link TlsGate}. */
    private void connect(HttpRequest request) {
        ReferenceCountUtil.release(request);
        HostPort hp;
        try {
            hp = HostPort.parse(request.uri(), -1);
        } catch (IllegalArgumentException e) {
            refuse(() -> Refusals.badRequest(ctx, link, "CONNECT needs host:port"));
            return;
        }
        if (hp.port() < 1) {
            refuse(() -> Refusals.badRequest(ctx, link, "CONNECT needs host:port"));
            return;
        }
        String what = "CONNECT " + RequestRewrite.hostHeader(hp.host(), hp.port(), false);
        link.decide(hp.host(), hp.port())
                .whenComplete((d, failure) -> ctx.executor().execute(() -> {
                    if (state == State.CLOSED) {
                        return;
                    }
                    if (failure != null || !d.allowed()) {
                        refuse(() -> Refusals.notDecided(
                                ctx,
                                link,
                                what,
                                failure,
                                failure != null ? "the name could not be resolved" : d.reason()));
                        return;
                    }
                    inbox.forEach(ReferenceCountUtil::release);
                    inbox.clear();
                    state = State.CLOSED; // this handler is done: the connection becomes a tunnel
                    DefaultFullHttpResponse established = new DefaultFullHttpResponse(
                            HttpVersion.HTTP_1_1, new HttpResponseStatus(200, "Connection established"));
                    ctx.writeAndFlush(established).addListener(f -> {
                        if (!f.isSuccess()) {
                            ctx.close();
                            return;
                        }
                        ctx.pipeline().addAfter(ctx.name(), "tls-gate", new TlsGate(link, hp.host(), hp.port(), d));
                        ctx.pipeline().remove(HttpServerCodec.class);
                        ctx.pipeline().remove(this);
                        ctx.channel().config().setAutoRead(true);
                    });
                }));
    }

    private void refuse(Runnable answer) {
        state = State.CLOSED;
        inbox.forEach(ReferenceCountUtil::release);
        inbox.clear();
        if (upstream != null) {
            upstream.close();
        }
        answer.run();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        state = State.CLOSED;
        inbox.forEach(ReferenceCountUtil::release);
        inbox.clear();
        if (upstream != null) {
            upstream.close();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (upstream != null) {
            upstream.config().setAutoRead(ctx.channel().isWritable());
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }

    /** The destination's side: its response streamed back to the sandbox. */
    private final class Responses extends ChannelInboundHandlerAdapter {

        private boolean started;
        private boolean informational;

        @Override
        public void channelRead(ChannelHandlerContext up, Object msg) {
            if (state == State.CLOSED || !(msg instanceof HttpObject)) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (msg instanceof HttpResponse response) {
                started = true;
                int code = response.status().code();
                informational = code >= 100 && code < 200;
                if (!informational && !HttpUtil.isKeepAlive(response)) {
                    closeAfterResponse = true;
                }
                if (closeAfterResponse && !informational) {
                    response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                }
            }
            ctx.write(msg, ctx.voidPromise());
            if (!ctx.channel().isWritable()) {
                up.channel().config().setAutoRead(false); // before the flush, as in Relay
                ctx.flush();
            }
            if (msg instanceof LastHttpContent) {
                if (informational) {
                    informational = false;
                    return;
                }
                started = false;
                done();
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext up) {
            ctx.flush();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext up) {
            if (up.channel().isWritable() && state == State.STREAMING) {
                drain();
            }
        }

        private void done() {
            boolean bodyUnsent = state == State.STREAMING;
            if (closeAfterResponse || bodyUnsent) {
                state = State.CLOSED;
                ctx.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            ctx.flush();
            state = State.IDLE;
            drain();
        }

        @Override
        public void channelInactive(ChannelHandlerContext up) {
            if (up.channel() == upstream) {
                upstream = null;
                if (state == State.STREAMING || state == State.AWAITING_RESPONSE) {
                    if (!started && state != State.CLOSED) {
                        refuse(() -> Refusals.badGateway(ctx, "the destination closed the connection"));
                    } else {
                        state = State.CLOSED;
                        Relay.closeOnFlush(ctx.channel());
                    }
                }
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext up, Throwable cause) {
            if (!started && (state == State.STREAMING || state == State.AWAITING_RESPONSE)) {
                String why = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
                refuse(() -> Refusals.badGateway(
                        ctx, "the connection to the destination failed: " + why.toLowerCase(Locale.ROOT)));
            }
            up.close();
        }
    }
}
