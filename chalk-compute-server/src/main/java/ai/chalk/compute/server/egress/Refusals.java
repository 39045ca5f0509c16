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

/**
 * The answers a sandbox's HTTP client gets when the proxy does not forward its request: 403 for what the policy
 * refuses (the body names the policy and the reason), 400 for what is not a proxy request, 502 when the destination
 * cannot be reached. Each closes the connection.
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

    static void badGateway(ChannelHandlerContext ctx, String why) {
        send(ctx, HttpResponseStatus.BAD_GATEWAY, "Chalk Compute egress proxy: " + why + "\n");
    }

    private static void send(ChannelHandlerContext ctx, HttpResponseStatus status, String body) {
        FullHttpResponse r = new DefaultFullHttpResponse(
                HttpVersion.HTTP_1_1, status, Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        r.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8")
                .setInt(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes())
                .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE)
                .set(MARK, status.code() == 403 ? "refused" : "error");
        ctx.channel().config().setAutoRead(false);
        ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
    }
}
