package ai.chalk.compute.server.runtime.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A function worker's socket lives in a directory its sandbox can write: deployed code may rename it away and put a
 * link to another worker's socket in its place. The server connects through a pin on the socket itself.
 */
class PinnedSocketSecurityTest {

    @Test
    void aConnectionThroughThePinReachesThePinnedSocketWhateverTheNameNowPointsTo(@TempDir Path dir) throws Exception {
        Path run = Files.createDirectory(dir.resolve("run"));
        try (ServerSocketChannel mine = listen(run.resolve("worker.sock"));
                ServerSocketChannel other = listen(dir.resolve("other.sock"));
                BeneathRoot root = BeneathRoot.open(run, "the run directory");
                PinnedSocket pin = root.pinSocket("worker.sock")) {
            // the sandbox swaps the name for a link to the other worker's socket
            Files.move(run.resolve("worker.sock"), run.resolve("moved.sock"), StandardCopyOption.ATOMIC_MOVE);
            Files.createSymbolicLink(run.resolve("worker.sock"), dir.resolve("other.sock"));
            try (SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(pin.address()))) {
                c.write(ByteBuffer.wrap("call".getBytes(StandardCharsets.UTF_8)));
                try (SocketChannel accepted = mine.accept()) {
                    ByteBuffer b = ByteBuffer.allocate(4);
                    accepted.read(b);
                    assertThat(new String(b.array(), StandardCharsets.UTF_8)).isEqualTo("call");
                }
            }
            other.configureBlocking(false);
            assertThat(other.accept()).as("the other worker got nothing").isNull();
            // pinning the name now: a link is refused, not followed
            assertThatThrownBy(() -> root.pinSocket("worker.sock")).isInstanceOf(BeneathRoot.Refused.class);
        }
    }

    @Test
    void onlyASocketCanBePinned(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("worker.sock"), "not a socket");
        try (BeneathRoot root = BeneathRoot.open(dir, "the run directory")) {
            assertThatThrownBy(() -> root.pinSocket("worker.sock")).isInstanceOf(BeneathRoot.Refused.class);
        }
    }

    private static ServerSocketChannel listen(Path path) throws Exception {
        ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        s.bind(UnixDomainSocketAddress.of(path));
        return s;
    }
}
