package ai.chalk.compute.server.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** The owner of a real loopback connection's client end, read from the kernel's socket table. */
class LoopbackOwnerTest {

    @Test
    void aLiveConnectionIsItsUsersAndAClosedOneIsNobodys() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            // user nobody connects, says which port it connected from, then closes when told
            Process client = AsNobody.python(
                    "import socket, sys\n"
                            + "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
                            + "print(s.getsockname()[1], flush=True)\n"
                            + "sys.stdin.readline()\n"
                            + "s.close()\n"
                            + "sys.stdin.readline()\n",
                    Integer.toString(server.getLocalPort()));
            try (Socket accepted = server.accept();
                    BufferedReader out = new BufferedReader(
                            new InputStreamReader(client.getInputStream(), StandardCharsets.US_ASCII));
                    OutputStream in = client.getOutputStream()) {
                int port = Integer.parseInt(out.readLine().strip());
                InetSocketAddress from = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
                InetSocketAddress to = (InetSocketAddress) accepted.getLocalSocketAddress();
                assertThat(accepted.getRemoteSocketAddress()).isEqualTo(from);
                assertThat(LoopbackOwner.of(from, to)).isEqualTo(OptionalLong.of(65534));
                assertThat(PeerAddress.of(from, to)).isEqualTo(PeerAddress.LOOPBACK + ", user 65534");

                // closed by its owner, the client end waits in FIN_WAIT2 or TIME_WAIT, which the kernel lists as uid 0
                in.write('\n');
                in.flush();
                Awaitility.await().until(() -> LoopbackOwner.of(from, to).isEmpty());
                assertThat(PeerAddress.of(from, to)).as("never root's").isEqualTo(PeerAddress.LOOPBACK);
                in.write('\n');
                in.flush();
            } finally {
                client.destroyForcibly().waitFor();
            }
        }
    }
}
