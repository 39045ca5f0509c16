package ai.chalk.compute.server.blob;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Uploads cannot fill the server's disk: a blob that would leave less than the store's reserve is refused before a byte
 * is written, and one that gets there while it is written (uploads that each fit, side by side) is dropped as it does.
 * Before, a tenant's uploads (4 GiB each, as many as it liked) were written until the disk was full.
 */
@Tag("alone")
class BlobStoreDiskTest {

    @TempDir
    Path dir;

    @Test
    void aBlobTheDiskHasNoRoomForIsRefusedBeforeAByteIsWritten() throws Exception {
        long free = Files.getFileStore(dir).getUsableSpace();
        BlobStore blobs = new BlobStore(dir.resolve("blobs"), free - (8L << 20));
        blobs.checkRoomFor(1 << 20);
        assertThatThrownBy(() -> blobs.checkRoomFor(64L << 20))
                .isInstanceOf(DiskFullException.class)
                .hasMessageContaining("MiB free and keeps")
                .hasMessageContaining("the blob was not stored");
    }

    @Test
    void anUploadThatReachesTheReserveIsDroppedAsItDoes() throws Exception {
        long free = Files.getFileStore(dir).getUsableSpace();
        BlobStore blobs = new BlobStore(dir.resolve("blobs"), free - (24L << 20));
        byte[] chunk = new byte[1 << 20];
        new Random(3).nextBytes(chunk);
        BlobStore.Upload upload = blobs.begin();
        assertThatThrownBy(() -> {
                    for (int i = 0; i < 64; i++) {
                        upload.write(chunk, 0, chunk.length);
                    }
                })
                .isInstanceOf(DiskFullException.class)
                .hasMessageContaining("an upload of more than");
        assertThat(upload.written()).isLessThan(64L << 20);
        try (var incoming = Files.list(dir.resolve("blobs").resolve("incoming"))) {
            assertThat(incoming).isEmpty();
        }
        assertThat(blobs.digests()).isEmpty();
    }
}
