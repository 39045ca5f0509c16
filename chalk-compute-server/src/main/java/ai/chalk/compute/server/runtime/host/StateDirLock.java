package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The exclusive lock a runtime holds on its state directory (its {@code .lock} file), so that two servers never
 * share one directory.
 */
public final class StateDirLock {

    private static final Logger log = LoggerFactory.getLogger(StateDirLock.class);

    private final FileChannel channel;
    private final FileLock lock;

    private StateDirLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Locks {@code stateDir} for {@code owner} (e.g. {@code "local runtime"}), or fails at once when another
     * holds it.
     */
    public static StateDirLock acquire(Path stateDir, String owner) {
        FileChannel channel;
        try {
            channel = FileChannel.open(stateDir.resolve(".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot lock the " + owner + "'s state directory " + stateDir, e);
        }
        FileLock l;
        try {
            l = channel.tryLock();
        } catch (OverlappingFileLockException e) {
            l = null;
        } catch (IOException e) {
            closeQuietly(channel);
            throw new UncheckedIOException("cannot lock the " + owner + "'s state directory " + stateDir, e);
        }
        if (l == null) {
            closeQuietly(channel);
            throw new IllegalStateException("the state directory " + stateDir + " is in use by another " + owner
                    + "; give each server its own data directory");
        }
        return new StateDirLock(channel, l);
    }

    /** Releases the lock and closes its file. */
    public void release() {
        try {
            lock.release();
        } catch (IOException e) {
            // closing the channel releases it too
        }
        try {
            channel.close();
        } catch (IOException e) {
            log.debug("closing the state lock: {}", e.toString());
        }
    }

    private static void closeQuietly(FileChannel c) {
        try {
            c.close();
        } catch (IOException e) {
            // nothing to do
        }
    }
}
