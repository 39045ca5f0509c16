package ai.chalk.compute.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A peer without credentials opens connections to the HTTP port in a loop and sends nothing on them: the JDK's server
 * accepts every one (it keeps no limit unless told), each holding a file descriptor of the server's, so that the loop
 * ran the whole server out of them. The port now keeps {@link HttpPort#DEFAULT_MAX_CONNECTIONS} open and closes the
 * rest as soon as they are accepted. The JDK reads its limit once per JVM, so the port runs in a JVM of its own here,
 * as the standalone server does (this test's JVM may have started a JDK server of its own before).
 */
class HttpConnectionsSecurityTest {

    private static final int FLOOD = HttpPort.DEFAULT_MAX_CONNECTIONS + 300;

    @Test
    void aConnectionFloodHoldsAtMostThePortsLimitOfDescriptors() throws Exception {
        Process port = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        PortProcess.class.getName())
                .redirectErrorStream(true)
                .start();
        List<SocketChannel> flood = new ArrayList<>();
        try {
            // the port's URL, past anything the JVM says first (a JAVA_TOOL_OPTIONS notice)
            BufferedReader out =
                    new BufferedReader(new InputStreamReader(port.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            while (line != null && !line.startsWith("http://")) {
                line = out.readLine();
            }
            assertThat(line).as("the port's URL").isNotNull();
            URI url = URI.create(line);
            long before = descriptors(port);
            // from many threads, as a flood comes: one connect at a time waits out each SYN the full backlog dropped
            ExecutorService connecting = Executors.newFixedThreadPool(32);
            try {
                List<Future<SocketChannel>> connects = new ArrayList<>();
                for (int i = 0; i < FLOOD; i++) {
                    connects.add(connecting.submit(
                            () -> SocketChannel.open(new InetSocketAddress(url.getHost(), url.getPort()))));
                }
                for (Future<SocketChannel> connect : connects) {
                    flood.add(connect.get());
                }
            } finally {
                connecting.shutdown();
            }
            Thread.sleep(1_000); // the accept loop has seen them all
            long held = descriptors(port) - before;
            assertThat(held)
                    .as("descriptors the port holds for %d silent connections", FLOOD)
                    .isLessThanOrEqualTo(HttpPort.DEFAULT_MAX_CONNECTIONS + 16);
            int open = 0;
            for (SocketChannel socket : flood) {
                open += closedByServer(socket) ? 0 : 1;
            }
            assertThat(open).isBetween(HttpPort.DEFAULT_MAX_CONNECTIONS - 16, HttpPort.DEFAULT_MAX_CONNECTIONS);

            for (SocketChannel socket : flood) {
                socket.close();
            }
            HttpResponse<String> answer = HttpClient.newHttpClient()
                    .send(
                            HttpRequest.newBuilder(url.resolve("/nothing-here"))
                                    .timeout(Duration.ofSeconds(15))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            assertThat(answer.statusCode())
                    .as("the port serves once the flood is gone")
                    .isEqualTo(404);
        } finally {
            for (SocketChannel socket : flood) {
                socket.close();
            }
            port.destroy();
            port.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** Whether the server closed {@code socket} (at once: it closes a refused one as it accepts it). */
    private static boolean closedByServer(SocketChannel socket) throws IOException {
        socket.configureBlocking(false);
        try {
            return socket.read(ByteBuffer.allocate(1)) == -1;
        } catch (IOException reset) {
            return true;
        }
    }

    private static long descriptors(Process process) throws IOException {
        try (var fds = Files.list(Path.of("/proc", Long.toString(process.pid()), "fd"))) {
            return fds.count();
        }
    }

    /** Opens an {@link HttpPort} as the server does, prints its URL and serves until its stdin ends. */
    static final class PortProcess {
        public static void main(String[] args) throws Exception {
            try (HttpPort port = HttpPort.open("127.0.0.1", 0)) {
                System.out.println(port.url());
                System.out.flush();
                while (System.in.read() != -1) {
                    // serve until the test is done
                }
            }
        }
    }
}
