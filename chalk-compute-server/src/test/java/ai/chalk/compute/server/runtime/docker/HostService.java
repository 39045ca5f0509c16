package ai.chalk.compute.server.runtime.docker;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A service of the host that sandboxes and build steps must not reach: it listens on every address of the host
 * ({@code 0.0.0.0}), counts the connections it accepts and answers each with {@code reply}.
 */
final class HostService implements AutoCloseable {

    private final ServerSocket socket;
    private final AtomicInteger accepted = new AtomicInteger();

    HostService(String reply) throws IOException {
        socket = new ServerSocket();
        socket.bind(new InetSocketAddress("0.0.0.0", 0));
        Thread acceptor = new Thread(
                () -> {
                    while (!socket.isClosed()) {
                        try (Socket s = socket.accept()) {
                            accepted.incrementAndGet();
                            s.getOutputStream().write(reply.getBytes(StandardCharsets.UTF_8));
                        } catch (Exception e) {
                            return;
                        }
                    }
                },
                "host-service");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return socket.getLocalPort();
    }

    /** Connections accepted so far. */
    int accepted() {
        return accepted.get();
    }

    /** The host's own IPv4 addresses but loopback: where a host service bound to 0.0.0.0 answers. */
    static List<String> hostAddresses() throws IOException {
        List<String> addresses = new ArrayList<>();
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                if (a instanceof Inet4Address && !a.isLoopbackAddress()) {
                    addresses.add(a.getHostAddress());
                }
            }
        }
        return addresses;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
