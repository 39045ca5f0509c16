package ai.chalk.compute.function.deploy;

import java.io.BufferedOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import java.util.zip.Deflater;
import java.util.zip.DeflaterOutputStream;

/**
 * A directory as a zip whose bytes depend on its files' paths and contents only: entries sorted by path,
 * directories included, every timestamp 1980-01-01T00:00 as a DOS time, no extra fields, DEFLATED.
 *
 * <p>Written here rather than with {@link java.util.zip.ZipOutputStream}, which stores 1980-01-01T00:00 (its
 * "before 1980" marker) with an extended-timestamp extra field computed in the default time zone. Entries are
 * streamed with data descriptors, so memory stays bounded; more than 65,535 entries or 4 GiB (ZIP64) is refused.
 */
final class DeterministicZip {

    private static final int DOS_TIME = 0; // 00:00:00
    private static final int DOS_DATE = (1 << 5) | 1; // 1980-01-01
    private static final int FLAGS = 0x0808; // data descriptor follows; names are UTF-8
    private static final int DEFLATED = 8;
    private static final int VERSION = 20;
    private static final long MAX_32 = 0xFFFF_FFFFL;

    private DeterministicZip() {}

    private record Written(byte[] name, long crc, long compressed, long size, long offset) {}

    /** Reads one file of the tree being zipped. */
    @FunctionalInterface
    interface Contents {
        /**
         * Opens a file.
         *
         * @param path its path in the zip, {@code /}-separated
         * @return its bytes
         */
        InputStream open(String path) throws IOException;
    }

    /**
     * Zips a directory: every file and directory below it.
     *
     * @param directory the directory
     * @param zip       the zip to write
     */
    static void write(Path directory, Path zip) throws IOException {
        List<String> paths = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(directory)) {
            walk.filter(p -> !p.equals(directory)).forEach(p -> {
                String relative = directory.relativize(p).toString().replace('\\', '/');
                paths.add(Files.isDirectory(p) ? relative + "/" : relative);
            });
        }
        write(paths, path -> Files.newInputStream(directory.resolve(path)), directory.toString(), zip);
    }

    /**
     * Zips a tree given by its paths, so a tree held elsewhere (in a jar) gives the bytes its directory would.
     *
     * @param paths    every file and directory of the tree, directories ending in {@code /}, in any order;
     *                 a directory holding files must be listed too, as a directory walk lists it
     * @param contents reads a file
     * @param what     names the tree in errors
     * @param zip      the zip to write
     */
    static void write(Collection<String> paths, Contents contents, String what, Path zip) throws IOException {
        List<String> sorted = new ArrayList<>(paths);
        sorted.sort(null);
        if (sorted.size() > 0xFFFF) {
            throw new IOException(what + " holds " + sorted.size() + " files and directories; at most 65535 fit");
        }
        Deflater deflater = new Deflater(Deflater.DEFAULT_COMPRESSION, true);
        try (Counting out = new Counting(new BufferedOutputStream(Files.newOutputStream(zip)))) {
            List<Written> written = new ArrayList<>();
            byte[] buffer = new byte[64 * 1024];
            for (String path : sorted) {
                byte[] name = path.getBytes(StandardCharsets.UTF_8);
                long offset = out.count;
                header(out, 0x04034b50, name, 0, 0, 0, -1);
                CRC32 crc = new CRC32();
                long size = 0;
                long start = out.count;
                deflater.reset();
                DeflaterOutputStream deflating = new DeflaterOutputStream(new Unclosable(out), deflater, buffer.length);
                if (!path.endsWith("/")) {
                    try (InputStream in = contents.open(path)) {
                        for (int n; (n = in.read(buffer)) > 0; ) {
                            crc.update(buffer, 0, n);
                            deflating.write(buffer, 0, n);
                            size += n;
                        }
                    }
                }
                deflating.finish();
                long compressed = out.count - start;
                if (size > MAX_32 || compressed > MAX_32 || out.count > MAX_32) {
                    throw new IOException(what + " is larger than a zip without ZIP64 holds (4 GiB)");
                }
                int32(out, 0x08074b50);
                int32(out, crc.getValue());
                int32(out, compressed);
                int32(out, size);
                written.add(new Written(name, crc.getValue(), compressed, size, offset));
            }
            long directoryStart = out.count;
            for (Written w : written) {
                header(out, 0x02014b50, w.name(), w.crc(), w.compressed(), w.size(), w.offset());
            }
            long directorySize = out.count - directoryStart;
            int32(out, 0x06054b50);
            int16(out, 0);
            int16(out, 0);
            int16(out, written.size());
            int16(out, written.size());
            int32(out, directorySize);
            int32(out, directoryStart);
            int16(out, 0);
        } finally {
            deflater.end();
        }
    }

    /** A local header ({@code offset < 0}) or a central directory header. */
    private static void header(
            OutputStream out, int signature, byte[] name, long crc, long compressed, long size, long offset)
            throws IOException {
        boolean central = offset >= 0;
        int32(out, signature);
        if (central) {
            int16(out, VERSION); // made by
        }
        int16(out, VERSION); // needed
        int16(out, FLAGS);
        int16(out, DEFLATED);
        int16(out, DOS_TIME);
        int16(out, DOS_DATE);
        int32(out, crc);
        int32(out, compressed);
        int32(out, size);
        int16(out, name.length);
        int16(out, 0); // extra
        if (central) {
            int16(out, 0); // comment
            int16(out, 0); // disk
            int16(out, 0); // internal attributes
            int32(out, 0); // external attributes
            int32(out, offset);
        }
        out.write(name);
    }

    private static void int16(OutputStream out, int v) throws IOException {
        out.write(v & 0xff);
        out.write((v >>> 8) & 0xff);
    }

    private static void int32(OutputStream out, long v) throws IOException {
        int16(out, (int) (v & 0xffff));
        int16(out, (int) ((v >>> 16) & 0xffff));
    }

    /** Counts the bytes written through it. */
    private static final class Counting extends FilterOutputStream {
        long count;

        Counting(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count += len;
        }
    }

    /** Keeps a per-entry stream from closing the zip. */
    private static final class Unclosable extends FilterOutputStream {
        Unclosable(OutputStream out) {
            super(out);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
        }

        @Override
        public void close() {}
    }
}
