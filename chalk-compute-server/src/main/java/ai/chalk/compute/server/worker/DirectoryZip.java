package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.runtime.host.DiskReserve;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.apache.commons.io.input.BoundedInputStream;

/**
 * Unpacks a code snapshot's directory entry (a zip the deployer uploaded) on the server's disk, bounded: the zip's own
 * size bounds what it may write. A blob of a few hundred kilobytes can hold gigabytes of zeros (a zip bomb), and the
 * server unpacks it as root onto the disk its store and the host live on; a deployer could fill that disk. So unpacking
 * stops when a zip writes more than {@value #MAX_RATIO} times the bytes read of it (Apache POI's bound for its zips,
 * past a grace of {@value #GRACE_BYTES} bytes), holds more than {@value #MAX_ENTRIES} entries (files take inodes, which
 * run out apart from bytes), or would leave less than the disk's reserve free ({@link DiskReserve}).
 */
final class DirectoryZip {

    /** Bytes a zip may expand to per byte of it, past {@link #GRACE_BYTES}. */
    static final long MAX_RATIO = 100;
    /** What any zip may expand to, whatever its ratio: class files and resources compress a few times over. */
    static final long GRACE_BYTES = 64L << 20;
    /** Entries of one zip, at most. */
    static final int MAX_ENTRIES = 1_000_000;
    /** How often the disk's free space is read, in bytes written. */
    private static final long DISK_CHECK_BYTES = 16L << 20;

    private final long diskReserve;

    /** @param diskReserve the bytes the disk must keep free; unpacking stops before it would be left with less */
    DirectoryZip(long diskReserve) {
        this.diskReserve = diskReserve;
    }

    /**
     * Unpacks {@code zip} into {@code out} (created), refusing entries that point outside it.
     *
     * @param name how messages name the entry
     * @throws IOException when an entry points outside {@code out}, or a bound is crossed (the message says which);
     *                     what was written stays for the caller to remove
     */
    void extract(InputStream zip, Path out, String name) throws IOException {
        Files.createDirectories(out);
        Path root = out.toAbsolutePath().normalize();
        BoundedInputStream read =
                BoundedInputStream.builder().setInputStream(zip).get();
        long written = 0;
        long checkedAt = 0;
        int entries = 0;
        byte[] buffer = new byte[64 << 10];
        try (ZipInputStream in = new ZipInputStream(read)) {
            ZipEntry z;
            while ((z = in.getNextEntry()) != null) {
                if (++entries > MAX_ENTRIES) {
                    throw new IOException(
                            "code entry " + name + " holds more than " + MAX_ENTRIES + " files; such zips are refused");
                }
                Path p = root.resolve(z.getName()).normalize();
                if (!p.startsWith(root) || z.getName().startsWith("/")) {
                    throw new IOException("code entry " + name + " holds \"" + z.getName()
                            + "\", which points outside its directory; such zips are refused");
                }
                if (z.isDirectory()) {
                    Files.createDirectories(p);
                    continue;
                }
                Files.createDirectories(p.getParent());
                try (OutputStream file = Files.newOutputStream(p)) {
                    for (int n; (n = in.read(buffer)) > 0; ) {
                        file.write(buffer, 0, n);
                        written += n;
                        if (written > GRACE_BYTES + MAX_RATIO * read.getCount()) {
                            throw new IOException("code entry " + name + " expands to more than " + MAX_RATIO
                                    + " times its size (" + written + " bytes written from " + read.getCount()
                                    + " read); such zips are refused");
                        }
                        if (written - checkedAt >= DISK_CHECK_BYTES) {
                            checkedAt = written;
                            if (DiskReserve.below(root, diskReserve)) {
                                throw new IOException("code entry " + name + " was not unpacked: the server's disk"
                                        + " would be left with less than " + diskReserve / (1 << 20)
                                        + " MiB free after " + written + " bytes of it");
                            }
                        }
                    }
                }
            }
        }
    }
}
