package ai.chalk.compute.server.egress;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * Copies what one channel reads to its peer, untouched: a tunnel's half. Reading stops while the peer cannot take
 * more (its outbound buffer is full) and resumes when it can, so a fast sender never fills the server's memory.
 */
final class Relay extends ChannelInboundHandlerAdapter {

    private final Channel peer;

    Relay(Channel peer) {
        this.peer = peer;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!peer.isActive()) {
            io.netty.util.ReferenceCountUtil.release(msg);
            ctx.close();
            return;
        }
        peer.write(msg, peer.voidPromise());
        if (!peer.isWritable()) {
            // paused before the flush: a flush that drains the peer at once fires its writability change (which
            // resumes reading here) during the flush, and a pause after it would never be lifted
            ctx.channel().config().setAutoRead(false);
            peer.flush();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        peer.flush();
        ctx.fireChannelReadComplete();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            peer.config().setAutoRead(true);
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        closeOnFlush(peer);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }

    /** Closes {@code ch} once what was written to it is sent. */
    static void closeOnFlush(Channel ch) {
        if (ch.isActive()) {
            ch.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
