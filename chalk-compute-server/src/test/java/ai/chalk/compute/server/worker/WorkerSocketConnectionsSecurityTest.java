package ai.chalk.compute.server.worker;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Deployed code of any environment opens connections to the replicas' socket in a loop, as a peer of the TCP port once
 * could: the socket had no count, so that it ran the server out of file descriptors for every tenant. Now a peer (the
 * pid namespace it runs in, as every sandbox has its own) keeps at most its share open, past it a connection is closed
 * as soon as it is accepted, and other peers still connect.
 */
class WorkerSocketConnectionsSecurityTest {

    @Test
    void onePeerKeepsItsShareOfTheSocketsConnectionsAndAnotherStillConnects(@TempDir Path dataDir) throws Exception {
        Path dir = dataDir.resolve("server");
        HealthStatusManager health = new HealthStatusManager();
        EpollEventLoopGroup loop = new EpollEventLoopGroup(1);
        List<SocketChannel> silent = new ArrayList<>();
        try (ServerSocketForWorkers socket = new ServerSocketForWorkers(dir, 8, 2)) {
            socket.start(List.of(health.getHealthService().bindService()), 1 << 20, new Untraced());
            Path path = dir.resolve(WorkerLaunch.SERVER_SOCKET_NAME);
            ManagedChannel channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(path.toString()))
                    .eventLoopGroup(loop)
                    .channelType(EpollDomainSocketChannel.class)
                    .usePlaintext()
                    .build();
            try {
                assertThat(health(channel)).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
                silent.add(SocketChannel.open(UnixDomainSocketAddress.of(path)));
                Awaitility.await()
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> socket.connections().open() == 2);
                assertThat(closedWithin(silent.get(0), Duration.ofSeconds(1)))
                        .as("a connection within its peer's share")
                        .isFalse();

                SocketChannel third = SocketChannel.open(UnixDomainSocketAddress.of(path));
                silent.add(third);
                // well within the 10 s a silent connection is given: this one is refused, not timed out
                assertThat(closedWithin(third, Duration.ofSeconds(3)))
                        .as("a connection past its peer's share is closed")
                        .isTrue();
                assertThat(socket.connections().open()).isEqualTo(2);

                assertThat(connectFromAnotherPidNamespace(path))
                        .as("a peer of another pid namespace connects and stays connected")
                        .isEqualTo("open");
                assertThat(health(channel))
                        .as("the connections already open still serve")
                        .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
            } finally {
                channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        } finally {
            for (SocketChannel s : silent) {
                s.close();
            }
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }

    /**
     * Connects from a pid namespace of its own, as a sandbox does, and says whether the server closed the connection
     * within two seconds.
     */
    private static String connectFromAnotherPidNamespace(Path socket) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(
                        "unshare",
                        "--pid",
                        "--fork",
                        "perl",
                        "-MIO::Socket::UNIX",
                        "-MIO::Select",
                        "-e",
                        "my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die \"connect: $!\";"
                                + " my @ready = IO::Select->new($s)->can_read(2);"
                                + " print(@ready && sysread($s, my $b, 1) == 0 ? \"closed\" : \"open\");",
                        socket.toString())
                .redirectErrorStream(true)
                .start();
        assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    }

    /** Whether the server closes {@code connection} (which sends nothing) within {@code wait}. */
    private static boolean closedWithin(SocketChannel connection, Duration wait)
            throws IOException, InterruptedException {
        connection.configureBlocking(false);
        long deadline = System.nanoTime() + wait.toNanos();
        ByteBuffer buffer = ByteBuffer.allocate(256);
        while (System.nanoTime() < deadline) {
            buffer.clear();
            if (connection.read(buffer) < 0) {
                return true;
            }
            Thread.sleep(20);
        }
        return false;
    }

    private static HealthCheckResponse.ServingStatus health(ManagedChannel channel) {
        return HealthGrpc.newBlockingStub(channel)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .check(HealthCheckRequest.getDefaultInstance())
                .getStatus();
    }

    /** The server's tracer of received messages, which this test does not look at. */
    private static final class Untraced extends ServerStreamTracer.Factory {
        @Override
        public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
            return new ServerStreamTracer() {};
        }
    }
}
