package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Whether anything in a set of watched directories was created, removed, renamed or had its mode or owner changed
 * since it was watched: one non-blocking {@code read(2)} of an inotify descriptor instead of a walk of the
 * directories. The kernel queues an event before the call that made the change returns, so a change made before
 * {@link #changed()} is asked is always seen. Mounts over the directories' entries are not seen.
 */
public final class DirectoryChanges implements AutoCloseable {

    private static final int EVENTS = InotifyCalls.IN_ATTRIB
            | InotifyCalls.IN_CREATE
            | InotifyCalls.IN_DELETE
            | InotifyCalls.IN_MOVED_FROM
            | InotifyCalls.IN_MOVED_TO
            | InotifyCalls.IN_DELETE_SELF
            | InotifyCalls.IN_MOVE_SELF
            | InotifyCalls.IN_ONLYDIR
            | InotifyCalls.IN_DONT_FOLLOW;

    private final int fd;
    private final byte[] events = new byte[4096];
    private boolean changed;
    private boolean closed;

    private DirectoryChanges(int fd) {
        this.fd = fd;
    }

    /**
     * A new watch of no directory yet, or empty where this host gives no inotify descriptor (its user's instances
     * used up, {@code fs.inotify.max_user_instances}; not Linux).
     */
    public static Optional<DirectoryChanges> open() {
        try {
            return Optional.of(new DirectoryChanges(
                    InotifyCalls.INSTANCE.inotify_init1(InotifyCalls.IN_NONBLOCK | InotifyCalls.IN_CLOEXEC)));
        } catch (LastErrorException | UnsatisfiedLinkError e) {
            return Optional.empty();
        }
    }

    /**
     * Watches the entries of {@code dir} (not below it: watch its subdirectories too) and {@code dir} itself. Watch a
     * directory before reading it, so that a change made while it is read is seen.
     *
     * @return false when it cannot be watched (a link, gone, {@code fs.inotify.max_user_watches} reached): then
     *     {@link #changed()} cannot vouch for it
     */
    public synchronized boolean watch(Path dir) {
        if (closed) {
            return false;
        }
        try {
            InotifyCalls.INSTANCE.inotify_add_watch(fd, dir.toString(), EVENTS);
            return true;
        } catch (LastErrorException e) {
            return false;
        }
    }

    /** Whether anything watched changed since it was watched; once it has, this stays true. */
    public synchronized boolean changed() {
        if (changed || closed) {
            return true;
        }
        try {
            // any event at all (an overflow of the queue too) is a change; what changed is of no interest
            changed = InotifyCalls.INSTANCE.read(fd, events, events.length) != 0;
        } catch (LastErrorException e) {
            changed = e.getErrorCode() != InotifyCalls.EAGAIN; // EAGAIN: no event queued
        }
        return changed;
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            try {
                InotifyCalls.INSTANCE.close(fd);
            } catch (LastErrorException e) {
                // nothing more to release
            }
        }
    }
}
