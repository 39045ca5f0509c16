package ai.chalk.compute.server.exec;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Bytes of one kind the server holds for clients (buffered session output, stdin a process has not read yet,
 * output collected for a reply), counted server-wide and refused past a limit, so that no number of calls can
 * hold more than the limit of heap. A reservation is released by whoever made it, exactly once.
 */
public final class ByteBudget {

    private final String what;
    private final long limit;
    private final AtomicLong used = new AtomicLong();

    /**
     * @param what  what the bytes are, for messages ("buffered session output")
     * @param limit the most bytes held at once
     */
    public ByteBudget(String what, long limit) {
        if (limit < 0) {
            throw new IllegalArgumentException(what + " budget must not be negative, got " + limit);
        }
        this.what = what;
        this.limit = limit;
    }

    /** Reserves {@code bytes} if they fit under the limit; false (and nothing reserved) when they do not. */
    public boolean tryReserve(long bytes) {
        if (bytes <= 0) {
            return true;
        }
        while (true) {
            long now = used.get();
            if (now + bytes > limit) {
                return false;
            }
            if (used.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    /** Gives back bytes reserved earlier. */
    public void release(long bytes) {
        if (bytes > 0) {
            used.addAndGet(-bytes);
        }
    }

    /** Bytes reserved now. */
    public long used() {
        return used.get();
    }

    /** The most bytes held at once. */
    public long limit() {
        return limit;
    }

    /** What the bytes are. */
    public String what() {
        return what;
    }

    @Override
    public String toString() {
        return what + " " + used.get() + "/" + limit + " bytes";
    }
}
