package ai.chalk.compute.server.runtime.local.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.host.DiskReserve;
import ai.chalk.compute.server.runtime.host.LayerQuota;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An image's size is its registry's to say: a layer of a few hundred kilobytes of gzip may hold gigabytes of zeros,
 * and unpacking it for a sandbox filled the disk the server's store and every tenant's blobs are on. The unpack now
 * stops once the cache's disk is down to its reserve, and what it wrote goes. The disk here is a real tmpfs of
 * 1.25 GiB, whose reserve is the least one (1 GiB).
 */
@Tag("alone") // mounts a file system
class LocalImagesDiskReserveTest {

    @Test
    void anImageThatWouldFillTheDiskStopsAtItsReserveAndLeavesNothing(@TempDir Path temp) throws Exception {
        Path disk = Files.createDirectories(temp.resolve("disk"));
        LayerQuota.mount(disk, 1280L << 20);
        try {
            Path imports = Files.createDirectories(temp.resolve("oci"));
            OciFixtures.writeLayout(imports.resolve("bomb"), List.of(zerosLayer(600L << 20)), false, "{}", "v1");
            LocalImages images = new LocalImages(disk.resolve("images"), imports, null);
            long freeBefore = Files.getFileStore(disk).getUsableSpace();

            assertThatThrownBy(() -> images.resolve("oci:bomb:v1"))
                    .isInstanceOf(ImageSourceException.class)
                    .hasMessageContaining("unpacking layer")
                    .hasMessageContaining("stopped")
                    .hasMessageContaining("keeps " + (DiskReserve.MIN_BYTES >> 20) + " MiB of it for itself");
            assertThat(Files.getFileStore(disk).getUsableSpace())
                    .as("what the unpack wrote is gone")
                    .isGreaterThanOrEqualTo(freeBefore - (1 << 20));
        } finally {
            LayerQuota.unmount(disk);
        }
    }

    /** A gzipped layer of one file of {@code bytes} zeros: about a thousandth of that in gzip. */
    private static byte[] zerosLayer(long bytes) throws Exception {
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(new GZIPOutputStream(gz))) {
            TarArchiveEntry e = new TarArchiveEntry("zeros");
            e.setSize(bytes);
            e.setMode(0644);
            tar.putArchiveEntry(e);
            byte[] chunk = new byte[1 << 20];
            for (long left = bytes; left > 0; left -= chunk.length) {
                tar.write(chunk, 0, (int) Math.min(chunk.length, left));
            }
            tar.closeArchiveEntry();
        }
        return gz.toByteArray();
    }
}
