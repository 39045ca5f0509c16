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
 * Unpacks the directory entries of one code snapshot (zips the deployer uploaded) on the server's disk, bounded: the
 * zips' own size bounds what they may write, all of them together. A blob of a few hundred kilobytes can hold
 * gigabytes of zeros (a zip bomb), or a million empty files and directories, and the server unpacks it as root onto the
 * disk its store and the host live on; a deployer could fill that disk. So unpacking stops when the snapshot's zips
 * write more than {@value #MAX_RATIO} times the bytes read of them (Apache POI's bound for its zips, past a grace of
 * {@value #GRACE_BYTES} bytes), each entry and each directory counting {@value #ENTRY_BYTES} bytes (an inode and a
 * block); when they hold more than {@value #MAX_ENTRIES} entries and directories; when a name is longer than
 * {@value #MAX_NAME_CHARS} characters; or when the disk would be left with less than its reserve
 * ({@link DiskReserve}). One instance per snapshot.
 */
final class DirectoryZip {

    /** Bytes the zips may expand to per byte of them, past {@link #GRACE_BYTES}. */
    static final long MAX_RATIO = 100;
    /** What any snapshot may expand to, whatever its ratio: class files and resources compress a few times over. */
    static final long GRACE_BYTES = 64L << 20;
    /** What an entry or a directory costs besides its bytes: an inode and a block. */
    static final long ENTRY_BYTES = 4096;
    /** Entries and directories of one snapshot, at most. */
    static final int MAX_ENTRIES = 1_000_000;
    /** An entry's name, at most (a long name of short parts makes thousands of nested directories). */
    static final int MAX_NAME_CHARS = 1024;
    /**
     * How often the disk's free space is read, in bytes written or counted: each unpack may go this far past the
     * reserve, and digests unpack side by side (a read costs a few microseconds).
     */
    private static final long DISK_CHECK_BYTES = 1L << 20;

    private final long diskReserve;
    private long read; // of the zips, all entries so far
    private long written; // bytes and entry costs, all entries so far
    private long checkedAt;
    private int entries;

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
        BoundedInputStream counted =
                BoundedInputStream.builder().setInputStream(zip).get();
        long readBefore = read;
        byte[] buffer = new byte[64 << 10];
        try (ZipInputStream in = new ZipInputStream(counted)) {
            ZipEntry z;
            while ((z = in.getNextEntry()) != null) {
                String entry = z.getName();
                if (entry.length() > MAX_NAME_CHARS) {
                    throw new IOException("code entry " + name + " holds a name of " + entry.length()
                            + " characters, more than " + MAX_NAME_CHARS + "; such zips are refused");
                }
                Path p = root.resolve(entry).normalize();
                if (!p.startsWith(root) || entry.startsWith("/")) {
                    throw new IOException("code entry " + name + " holds \"" + entry
                            + "\", which points outside its directory; such zips are refused");
                }
                // the entry and the directories its name makes
                count(
                        name,
                        1 + missingDirectories(z.isDirectory() ? p : p.getParent(), root),
                        counted.getCount() + readBefore,
                        root);
                if (z.isDirectory()) {
                    Files.createDirectories(p);
                    continue;
                }
                Files.createDirectories(p.getParent());
                try (OutputStream file = Files.newOutputStream(p)) {
                    for (int n; (n = in.read(buffer)) > 0; ) {
                        file.write(buffer, 0, n);
                        written += n;
                        check(name, counted.getCount() + readBefore, root);
                    }
                }
            }
        } finally {
            read = readBefore + counted.getCount();
        }
    }

    /** The directories from {@code dir} up to {@code root} that do not exist yet. */
    private static int missingDirectories(Path dir, Path root) {
        int missing = 0;
        for (Path d = dir; d != null && d.startsWith(root) && !Files.isDirectory(d); d = d.getParent()) {
            missing++;
        }
        return missing;
    }

    private void count(String name, int made, long readSoFar, Path root) throws IOException {
        entries += made;
        if (entries > MAX_ENTRIES) {
            throw new IOException("code entry " + name + " makes more than " + MAX_ENTRIES
                    + " files and directories with the snapshot's other entries; such zips are refused");
        }
        written += ENTRY_BYTES * made;
        check(name, readSoFar, root);
    }

    private void check(String name, long readSoFar, Path root) throws IOException {
        if (written > GRACE_BYTES + MAX_RATIO * readSoFar) {
            throw new IOException("code entry " + name + " expands to more than " + MAX_RATIO
                    + " times its size (" + written + " bytes written or counted from " + readSoFar
                    + " read, with the snapshot's other entries); such zips are refused");
        }
        if (written - checkedAt >= DISK_CHECK_BYTES) {
            checkedAt = written;
            long free = Files.getFileStore(root).getUsableSpace();
            if (free < diskReserve) {
                throw new IOException("code entry " + name + " was not unpacked: after " + written
                        + " bytes of the snapshot, " + DiskReserve.state(free, diskReserve));
            }
        }
    }
}
