package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.server.runtime.host.DiskReserve;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;

/**
 * A stream whose bytes are written to the image cache's disk as they are read (an engine's export, a layer's files):
 * every {@value #CHECK_EVERY} bytes it looks at the disk, and stops with {@link ImageSourceException} once less than its
 * reserve is free. An image's size is its registry's to say, and one of a layer of a few hundred megabytes of gzip
 * holding hundreds of gigabytes of zeros filled the disk every tenant's store and blobs are on.
 */
final class DiskReservedStream extends FilterInputStream {

    /** Bytes read between two looks at the disk: 16,384 tar headers, far fewer than the files a reserve keeps. */
    private static final long CHECK_EVERY = 8L << 20;

    private final Path disk;
    private final long reserve;
    private final String what;
    private long sinceCheck;

    /**
     * @param disk    a path on the disk written
     * @param reserve the bytes kept free there
     * @param what    what is being unpacked, for the refusal
     */
    DiskReservedStream(InputStream in, Path disk, long reserve, String what) throws IOException {
        super(in);
        this.disk = disk;
        this.reserve = reserve;
        this.what = what;
        check();
    }

    @Override
    public int read() throws IOException {
        int b = super.read();
        if (b >= 0) {
            counted(1);
        }
        return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        int n = super.read(b, off, len);
        if (n > 0) {
            counted(n);
        }
        return n;
    }

    @Override
    public long skip(long n) throws IOException {
        long skipped = super.skip(n);
        counted(skipped);
        return skipped;
    }

    private void counted(long n) throws IOException {
        sinceCheck += n;
        if (sinceCheck >= CHECK_EVERY) {
            sinceCheck = 0;
            check();
        }
    }

    private void check() throws IOException {
        if (DiskReserve.below(disk, reserve)) {
            throw new ImageSourceException(what + " stopped: " + DiskReserve.state(disk, reserve)
                    + "; what it wrote is removed (free room on that disk, or use a smaller image)");
        }
    }
}
