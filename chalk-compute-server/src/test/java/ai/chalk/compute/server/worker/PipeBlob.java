package ai.chalk.compute.server.worker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A blob whose file is a named pipe, so that whatever reads it waits until the test feeds it: a slow unpack on demand.
 */
public final class PipeBlob {

    private PipeBlob() {}

    /** Replaces the blob file {@code blob} with an empty named pipe. */
    public static void replace(Path blob) throws Exception {
        Files.delete(blob);
        assertThat(new ProcessBuilder("mkfifo", blob.toString()).start().waitFor())
                .as("mkfifo " + blob)
                .isZero();
    }

    /**
     * Writes {@code bytes} into the pipe and closes it. Opened for reading and writing, which never waits for a
     * reader (opened for writing only, it would wait for ever when nothing reads): a reader there gets the bytes and
     * then the end of the file.
     */
    public static void feed(Path pipe, byte[] bytes) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(pipe.toFile(), "rw")) {
            f.write(bytes);
        }
    }
}
