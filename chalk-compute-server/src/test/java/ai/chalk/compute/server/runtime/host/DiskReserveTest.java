package ai.chalk.compute.server.runtime.host;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A disk's reserve counts its files (inodes) as well as its bytes: empty files cost a file system of fixed inodes
 * nothing of its bytes, and snapshots of a sandbox holding half a million of them used up the data disk's files while
 * the byte reserve held. A real tmpfs with few inodes stands for such a disk.
 */
@Tag("alone") // mounts a file system
class DiskReserveTest {

    @Test
    void aDiskShortOfFilesIsBelowItsReserveWhateverBytesItHasFree(@TempDir Path temp) throws Exception {
        Path disk = Files.createDirectories(temp.resolve("disk"));
        FileSystemCalls.INSTANCE.mount(
                "chalk-test", disk.toString(), "tmpfs", 0, "size=64m,nr_inodes=" + (DiskReserve.MIN_FILES + 1_000));
        try {
            long reserve = 1 << 20;
            assertThat(DiskReserve.below(disk, reserve)).isFalse();
            assertThat(DiskReserve.state(disk, reserve)).doesNotContain("inodes");
            for (int i = 0; i < 2_000; i++) {
                Files.createFile(disk.resolve("empty-" + i));
            }
            assertThat(Files.getFileStore(disk).getUsableSpace())
                    .as("bytes free")
                    .isGreaterThan(60L << 20);
            assertThat(DiskReserve.below(disk, reserve))
                    .as("fewer than %d files free", DiskReserve.MIN_FILES)
                    .isTrue();
            assertThat(DiskReserve.state(disk, reserve))
                    .contains("files (inodes) free of its", "keeping " + DiskReserve.MIN_FILES + " for itself");
        } finally {
            FileSystemCalls.detach(disk);
        }
    }
}
