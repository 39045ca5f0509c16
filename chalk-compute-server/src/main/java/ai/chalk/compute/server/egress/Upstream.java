package ai.chalk.compute.server.egress;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.Promise;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.function.Consumer;

/**
 * Connections from the proxy to where sandboxes go: the addresses the policy allowed, tried in order until one
 * answers, on the event loop of the sandbox's connection. They do not read until their handlers are in place.
 */
final class Upstream {

    static final int CONNECT_TIMEOUT_MILLIS = 10_000;

    private Upstream() {}

    /**
     * Connects to {@code port} on the first of {@code addresses} that answers.
     *
     * @param pipeline sets up the new channel's handlers
     * @param result   completed with the connected channel (not reading yet), or the last failure
     */
    static void connect(
            EventLoop loop,
            List<InetAddress> addresses,
            int port,
            Consumer<Channel> pipeline,
            Promise<Channel> result) {
        attempt(loop, addresses, 0, port, pipeline, result, null);
    }

    private static void attempt(
            EventLoop loop,
            List<InetAddress> addresses,
            int i,
            int port,
            Consumer<Channel> pipeline,
            Promise<Channel> result,
            Throwable last) {
        if (i >= addresses.size()) {
            result.tryFailure(last != null ? last : new java.net.ConnectException("no address to connect to"));
            return;
        }
        ChannelFuture f = new Bootstrap()
                .group(loop)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, CONNECT_TIMEOUT_MILLIS)
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.SO_RCVBUF, EgressProxy.UPSTREAM_BUFFER)
                .option(ChannelOption.SO_SNDBUF, EgressProxy.UPSTREAM_BUFFER)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        pipeline.accept(ch);
                    }
                })
                .connect(new InetSocketAddress(addresses.get(i), port));
        f.addListener(done -> {
            if (done.isSuccess()) {
                if (!result.trySuccess(f.channel())) {
                    f.channel().close();
                }
            } else {
                attempt(loop, addresses, i + 1, port, pipeline, result, done.cause());
            }
        });
    }
}
