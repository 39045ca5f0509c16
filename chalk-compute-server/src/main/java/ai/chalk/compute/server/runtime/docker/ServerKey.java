package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.StateDirKey;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * The key that names a server's containers, networks and cgroup on its engine (the {@value DockerRuntime#LABEL_SERVER}
 * label): random, kept in the state directory's {@value #FILE} file. It was the hash of the state directory's path, so
 * two servers whose state directories had the same path (on two hosts sharing one engine, or a directory made again
 * where a moved one was) shared it, and each removed the other's sandboxes as its own leftovers at start. A state
 * directory from before the file keeps its path's key while the engine still has containers labelled with it.
 */
final class ServerKey {

    static final String FILE = "server-key";
    private static final Pattern KEY = Pattern.compile("[0-9a-f]{12}");
    private static final SecureRandom RANDOM = new SecureRandom();

    private ServerKey() {}

    /**
     * The key of {@code stateDir}, made now when it has none.
     *
     * @param labelled whether the engine has containers labelled with a key (for a state directory from before the
     *     file)
     * @throws UncheckedIOException when the file cannot be read or written, or holds something else than a key
     */
    static String of(Path stateDir, Predicate<String> labelled) {
        Path file = stateDir.resolve(FILE);
        try {
            String kept = Files.readString(file, StandardCharsets.US_ASCII).strip();
            if (!KEY.matcher(kept).matches()) {
                throw new IOException(file + " holds no server key (12 hex digits); remove it to get a new one");
            }
            return kept;
        } catch (NoSuchFileException e) {
            // made below
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String old = StateDirKey.of(stateDir);
        String key = labelled.test(old) ? old : HexFormat.of().formatHex(bytes());
        try {
            // on the disk before it is named, and the name with it: a key lost to a crash would leave every container
            // and network labelled with it to no server
            Path tmp = Files.createTempFile(stateDir, FILE, ".tmp");
            try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                out.write(ByteBuffer.wrap((key + "\n").getBytes(StandardCharsets.US_ASCII)));
                out.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
            try (FileChannel dir = FileChannel.open(stateDir, StandardOpenOption.READ)) {
                dir.force(true);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot keep the server's key in " + file, e);
        }
        return key;
    }

    private static byte[] bytes() {
        byte[] b = new byte[6];
        RANDOM.nextBytes(b);
        return b;
    }
}
