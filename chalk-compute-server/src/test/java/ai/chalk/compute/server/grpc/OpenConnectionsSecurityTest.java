package ai.chalk.compute.server.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.server.RunningServer;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A peer without credentials opens TCP connections in a loop and sends nothing: before, the server accepted every one
 * and held a file descriptor for each until it had none left for anyone (an exec, an upload, the next client). Now one
 * address keeps at most its share open and the server its limit; a connection past either is closed as soon as it is
 * accepted, other addresses still connect, and a closed connection gives its place back. Every address of the loopback
 * is one peer: a local user binding its sockets to {@code 127.0.0.2}, {@code 127.0.0.3} ... got a share per address.
 */
class OpenConnectionsSecurityTest {

    @Test
    void oneAddressKeepsItsShareOpenAndEveryLoopbackAddressIsOne(@TempDir Path dataDir) throws Exception {
        // the server's own test channel is the loopback's first connection
        try (RunningServer server = RunningServer.start(dataDir, b -> b.maxConnections(5, 2))) {
            OpenConnections open = server.server.openConnections();
            int port = server.server.port().orElseThrow();
            assertThat(health(server.channel)).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
            List<Socket> sockets = new ArrayList<>();
            try {
                Socket second = silent("127.0.0.1", port);
                sockets.add(second);
                Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> open.open() == 2);
                assertThat(isOpen(second)).isTrue();

                // past the address's share: closed at once, and a new client from there is told UNAVAILABLE
                Socket third = silent("127.0.0.1", port);
                sockets.add(third);
                assertThat(isOpen(third))
                        .as("a connection past the address's share is closed")
                        .isFalse();
                ManagedChannel refused = plain("127.0.0.1", port);
                try {
                    StatusRuntimeException e =
                            catchThrowableOfType(() -> health(refused), StatusRuntimeException.class);
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                } finally {
                    refused.shutdownNow();
                }
                // a local user may bind its sockets to any address of 127.0.0.0/8: all of them are this host's
                for (String other : List.of("127.0.0.2", "127.1.2.3", "127.255.255.254")) {
                    Socket rotated = silent(other, port);
                    sockets.add(rotated);
                    assertThat(isOpen(rotated))
                            .as("a connection from %s, the same host, past the loopback's share is closed", other)
                            .isFalse();
                }
                assertThat(open.open()).as("refused connections take no place").isEqualTo(2);
                assertThat(health(server.channel))
                        .as("the connections already open still serve")
                        .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);

                // a connection that closes gives its place back: its address connects again
                second.close();
                Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> open.open() == 1);
                ManagedChannel again = plain("127.0.0.1", port);
                try {
                    assertThat(health(again)).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
                } finally {
                    again.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                }
            } finally {
                for (Socket s : sockets) {
                    s.close();
                }
            }
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> open.open() == 1);
        }
    }

    @Test
    void anotherLocalUserFillsOnlyItsOwnShareOfTheLoopback(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.maxConnections(8, 2))) {
            OpenConnections open = server.server.openConnections();
            int port = server.server.port().orElseThrow();
            assertThat(health(server.channel)).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
            // user nobody opens three connections and holds them: two are its share
            Process other = AsNobody.python(
                    "import socket, sys, time\n"
                            + "s = [socket.create_connection(('127.0.0.1', int(sys.argv[1]))) for _ in range(3)]\n"
                            + "print('connected', flush=True)\n"
                            + "time.sleep(60)\n",
                    Integer.toString(port));
            List<Socket> sockets = new ArrayList<>();
            try {
                assertThat(new String(other.getInputStream().readNBytes("connected".length()), StandardCharsets.UTF_8))
                        .isEqualTo("connected");
                Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> open.open() == 3);
                // this user (the test's channel and one more) still connects: the loopback is one peer per user
                Socket mine = silent("127.0.0.1", port);
                sockets.add(mine);
                assertThat(isOpen(mine))
                        .as("another user's connection once nobody holds its share")
                        .isTrue();
                assertThat(open.open()).isEqualTo(4);
                Socket past = silent("127.0.0.2", port);
                sockets.add(past);
                assertThat(isOpen(past)).as("past this user's own share").isFalse();
            } finally {
                other.destroyForcibly().waitFor();
                for (Socket s : sockets) {
                    s.close();
                }
            }
        }
    }

    @Test
    void otherAddressesConnectUpToTheServersLimit() throws Exception {
        // two of this host's own addresses that are not loopback (its network interface's, Docker's bridge)
        List<InetAddress> others = NetworkInterface.networkInterfaces()
                .flatMap(NetworkInterface::inetAddresses)
                .filter(a -> !a.isLoopbackAddress() && !a.isLinkLocalAddress() && a instanceof Inet4Address)
                .limit(2)
                .toList();
        assertThat(others)
                .as("this host's IPv4 addresses other than the loopback")
                .hasSize(2);
        // a share as large as the limit: connections to this host's own addresses are keyed by the local user whose
        // socket it is when the kernel's table shows it (all of them root's here), else by the address, and either way
        // what refuses the fifth connection is the server's limit
        OpenConnections connections = new OpenConnections(4, 4);
        HealthStatusManager health = new HealthStatusManager();
        NettyServerBuilder builder =
                NettyServerBuilder.forAddress(new InetSocketAddress(0)).addService(health.getHealthService());
        EventLoopGroup[] loops = connections.applyTo(builder);
        Server server = builder.build().start();
        ManagedChannel client = plain("127.0.0.1", server.getPort());
        List<Socket> sockets = new ArrayList<>();
        try {
            assertThat(health(client)).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
            sockets.add(silent("127.0.0.2", "127.0.0.1", server.getPort()));
            String first = others.get(0).getHostAddress();
            sockets.add(silent(first, first, server.getPort()));
            sockets.add(silent(first, first, server.getPort()));
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> connections.open() == 4);
            for (Socket s : sockets) {
                assertThat(isOpen(s))
                        .as("a connection within its address's share and the limit")
                        .isTrue();
            }
            String second = others.get(1).getHostAddress();
            Socket overLimit = silent(second, second, server.getPort());
            sockets.add(overLimit);
            assertThat(isOpen(overLimit))
                    .as("a connection past the server's limit is closed, from an address with none open")
                    .isFalse();
            assertThat(health(client))
                    .as("the connections already open still serve")
                    .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
        } finally {
            for (Socket s : sockets) {
                s.close();
            }
            client.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            OpenConnections.shutdown(loops);
        }
    }

    @Test
    void aFloodFromOneAddressHoldsOnlyItsShareOfTheServersDescriptors(@TempDir Path dataDir) throws Exception {
        int flood = 1_000;
        try (RunningServer server = RunningServer.start(dataDir)) {
            int port = server.server.port().orElseThrow();
            long before = descriptors();
            List<Socket> sockets = new ArrayList<>();
            try {
                for (int i = 0; i < flood; i++) {
                    sockets.add(silent("127.0.0.9", port));
                }
                Awaitility.await()
                        .atMost(Duration.ofSeconds(30))
                        // the server's own test channel is the loopback's too: with the flood, one share in all
                        .until(() -> server.server.openConnections().open() == OpenConnections.DEFAULT_PER_ADDRESS);
                // the flood's own sockets are in this process too: what the server holds is what is left over
                Awaitility.await()
                        .atMost(Duration.ofSeconds(30))
                        .untilAsserted(() -> assertThat(descriptors() - before - flood)
                                .as("descriptors the server holds for %d connections from one address", flood)
                                .isLessThanOrEqualTo(OpenConnections.DEFAULT_PER_ADDRESS + 16));
                assertThat(health(server.channel)).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
            } finally {
                for (Socket s : sockets) {
                    s.close();
                }
            }
        }
    }

    @Test
    void aConnectionThatSaysNothingIsClosedAfterTheDeadline() throws Exception {
        OpenConnections connections = new OpenConnections(8, 4, Duration.ofMillis(500));
        HealthStatusManager health = new HealthStatusManager();
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .addService(health.getHealthService());
        EventLoopGroup[] loops = connections.applyTo(builder);
        Server server = builder.build().start();
        ManagedChannel client = plain("127.0.0.1", server.getPort());
        try (Socket silent = silent("127.0.0.1", server.getPort())) {
            assertThat(health(client)).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> connections.open() == 2);
            silent.setSoTimeout(10_000);
            InputStream in = silent.getInputStream();
            try {
                while (in.read() != -1) {
                    // the server's preface
                }
            } catch (SocketException reset) {
                // closed as well
            }
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> connections.open() == 1);
            Thread.sleep(1_000);
            assertThat(connections.open())
                    .as("a client that spoke keeps its connection, idle or not")
                    .isEqualTo(1);
            assertThat(health(client)).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
        } finally {
            client.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            OpenConnections.shutdown(loops);
        }
    }

    /** File descriptors this process has open: the server's and the test's. */
    private static long descriptors() throws IOException {
        try (var fds = java.nio.file.Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    @Test
    void eachConnectionIsToldHowManyCallsItMayHaveOpen(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir);
                Socket socket = silent("127.0.0.1", server.server.port().orElseThrow())) {
            socket.setSoTimeout(10_000);
            DataInputStream in = new DataInputStream(socket.getInputStream());
            // the server's preface: a SETTINGS frame (type 4) of 6-byte settings, sent before the client says anything
            int length = in.readUnsignedShort() << 8 | in.readUnsignedByte();
            assertThat(in.readUnsignedByte()).as("frame type").isEqualTo(4);
            in.readUnsignedByte(); // flags
            in.readInt(); // stream 0
            Map<Integer, Long> settings = new HashMap<>();
            for (int i = 0; i < length / 6; i++) {
                settings.put(in.readUnsignedShort(), in.readInt() & 0xFFFF_FFFFL);
            }
            assertThat(settings).as("SETTINGS_MAX_CONCURRENT_STREAMS").containsEntry(3, (long)
                    OpenConnections.MAX_CALLS_PER_CONNECTION);
        }
    }

    /** A connection from {@code source} to the loopback that sends nothing, as a flood's would. */
    private static Socket silent(String source, int port) throws IOException {
        return silent(source, "127.0.0.1", port);
    }

    /** A connection from {@code source} to {@code host} that sends nothing. */
    private static Socket silent(String source, String host, int port) throws IOException {
        Socket socket = new Socket();
        socket.bind(new InetSocketAddress(source, 0));
        socket.connect(new InetSocketAddress(host, port), 5_000);
        return socket;
    }

    /**
     * Whether the server keeps {@code socket} open: it sends the HTTP/2 settings on a connection it serves, and closes
     * one it refuses.
     */
    private static boolean isOpen(Socket socket) throws IOException {
        socket.setSoTimeout(5_000);
        InputStream in = socket.getInputStream();
        try {
            return in.read() != -1;
        } catch (SocketException reset) {
            return false;
        } catch (SocketTimeoutException quiet) {
            return true;
        }
    }

    private static ManagedChannel plain(String host, int port) {
        return NettyChannelBuilder.forAddress(host, port).usePlaintext().build();
    }

    private static HealthCheckResponse.ServingStatus health(ManagedChannel channel) {
        return HealthGrpc.newBlockingStub(channel)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .check(HealthCheckRequest.getDefaultInstance())
                .getStatus();
    }
}
