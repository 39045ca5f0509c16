package ai.chalk.compute.server.egress;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * The answers a sandbox's HTTP client gets when the proxy does not forward its request: 403 for what the policy
 * refuses (the body names the policy and the reason), 400 for what is not a proxy request, 502 when the destination
 * cannot be reached, 503 when its name cannot be looked up now. Each closes the connection.
 */
final class Refusals {

    /** Set on every answer the proxy itself makes, so a client can tell it from the destination's. */
    static final String MARK = "X-Chalk-Egress";

    private Refusals() {}

    static void forbidden(ChannelHandlerContext ctx, SandboxLink link, String what, String reason) {
        link.refused(what, reason);
        send(
                ctx,
                HttpResponseStatus.FORBIDDEN,
                "Refused by the network policy of sandbox " + link.sandboxId() + ": " + what + ": " + reason
                        + ".\nThe policy allows: " + link.policy().describe() + ".\n");
    }

    static void badRequest(ChannelHandlerContext ctx, SandboxLink link, String why) {
        link.refused("a malformed request", why);
        send(ctx, HttpResponseStatus.BAD_REQUEST, "Chalk Compute egress proxy: " + why + "\n");
    }

    /**
     * 503 with {@code Retry-After}: the proxy could not look the destination's name up now (the sandbox's lookups, or
     * every lookup thread, are busy), which is worth retrying, unlike a refusal.
     */
    static void busy(ChannelHandlerContext ctx, SandboxLink link, String what, SandboxLookups.Busy busy) {
        link.refused(what, String.valueOf(busy.getMessage()));
        send(
                ctx,
                HttpResponseStatus.SERVICE_UNAVAILABLE,
                "Chalk Compute egress proxy: " + what + ": " + String.valueOf(busy.getMessage()) + "\n");
    }

    /**
     * The answer to a request whose destination was not decided ({@code failure}) or was refused: 503 when the lookup
     * could not be made now ({@link #busy}), else 403 with {@code reason}.
     */
    static void notDecided(
            ChannelHandlerContext ctx, SandboxLink link, String what, @Nullable Throwable failure, String reason) {
        SandboxLookups.Busy busy = SandboxLookups.Busy.in(failure);
        if (busy != null) {
            busy(ctx, link, what, busy);
        } else {
            forbidden(ctx, link, what, reason);
        }
    }

    static void badGateway(ChannelHandlerContext ctx, String why) {
        send(ctx, HttpResponseStatus.BAD_GATEWAY, "Chalk Compute egress proxy: " + why + "\n");
    }

    private static void send(ChannelHandlerContext ctx, HttpResponseStatus status, String body) {
        FullHttpResponse r = new DefaultFullHttpResponse(
                HttpVersion.HTTP_1_1, status, Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        if (status.equals(HttpResponseStatus.SERVICE_UNAVAILABLE)) {
            r.headers().setInt(HttpHeaderNames.RETRY_AFTER, 1);
        }
        r.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8")
                .setInt(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes())
                .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE)
                .set(MARK, status.code() == 403 ? "refused" : "error");
        ctx.channel().config().setAutoRead(false);
        ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
    }
}
