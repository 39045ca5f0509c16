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
        blobs.begin(1 << 20).abort();
        assertThatThrownBy(() -> blobs.begin(64L << 20))
                .isInstanceOf(DiskFullException.class)
                .hasMessageContaining("MiB free and keeps")
                .hasMessageContaining("the blob was not stored");
        try (var incoming = Files.list(dir.resolve("blobs").resolve("incoming"))) {
            assertThat(incoming).isEmpty();
        }
    }

    /**
     * Many uploads announced at once: each passed the check against the same free space, and, each under the 16 MiB
     * after which an upload reads the free space again, 512 of them wrote 8 GiB past the reserve. What they
     * announce is now kept for them: past the room, the next is refused before it starts, and room comes back as
     * bytes are written or uploads end.
     */
    @Test
    void uploadsAnnouncedAtOnceShareTheRoomTheyAnnounced() throws Exception {
        long free = Files.getFileStore(dir).getUsableSpace();
        // room for two (and 20 MiB to spare for what else writes to the disk meanwhile)
        BlobStore blobs = new BlobStore(dir.resolve("blobs"), free - (100L << 20));
        long announced = 40L << 20;
        BlobStore.Upload first = blobs.begin(announced);
        BlobStore.Upload second = blobs.begin(announced);
        assertThatThrownBy(() -> blobs.begin(announced))
                .isInstanceOf(DiskFullException.class)
                .hasMessageContaining("that uploads under way announced");
        // an upload that ends gives its room back
        first.abort();
        BlobStore.Upload third = blobs.begin(announced);
        // written bytes leave the promise for the disk: the room stays taken, not twice
        byte[] chunk = new byte[1 << 20];
        new Random(5).nextBytes(chunk);
        for (int i = 0; i < 15; i++) {
            second.write(chunk, 0, chunk.length);
        }
        assertThatThrownBy(() -> blobs.begin(announced)).isInstanceOf(DiskFullException.class);
        second.abort();
        third.abort();
        blobs.begin(announced).abort();
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

    /**
     * An upload that announces its size and sends nothing keeps its room while its stream lasts: one environment's may
     * announce at most half the room above the reserve, so that another's still get the rest.
     */
    @Test
    void oneEnvironmentsUploadsAnnounceAtMostHalfTheRoom() throws Exception {
        long free = Files.getFileStore(dir).getUsableSpace();
        BlobStore blobs = new BlobStore(dir.resolve("blobs"), free - (100L << 20));
        BlobStore.Upload first = blobs.begin(40L << 20, "environment a");
        assertThatThrownBy(() -> blobs.begin(20L << 20, "environment a"))
                .isInstanceOf(DiskFullException.class)
                .hasMessageContaining("of this environment's")
                .hasMessageContaining("half of the room above the reserve");
        BlobStore.Upload other = blobs.begin(40L << 20, "environment b");
        first.abort();
        blobs.begin(20L << 20, "environment a").abort();
        other.abort();
    }
}
