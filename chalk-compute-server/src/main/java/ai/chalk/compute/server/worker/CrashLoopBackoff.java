package ai.chalk.compute.server.worker;

import java.time.Duration;

/**
 * How long a revision waits before it starts a replica again when its replicas keep dying young. A replica that dies
 * (or fails to start) within {@link #YOUNG} of its start is a young death; the first is replaced at once, and each
 * further one in a row doubles the wait from {@link #FIRST} up to {@link #LONGEST}; a replica that lived longer, or
 * was stopped for being idle, starts the count again. Replicas started side by side that die together count once.
 * Without it, code that exits as soon as it serves had the server start a JVM after another without pause, logging
 * each death, for as long as the revision served. Not thread-safe: its owner's lock guards it.
 */
public final class CrashLoopBackoff {

    static final Duration YOUNG = Duration.ofSeconds(60);
    static final Duration FIRST = Duration.ofSeconds(1);
    static final Duration LONGEST = Duration.ofSeconds(60);
    static final Duration NO_ROOM = Duration.ofSeconds(5);

    private int youngDeaths;
    private long notBefore = System.nanoTime();
    /** When the last death was counted ({@link System#nanoTime()}); a replica started before it died beside it. */
    private long lastCounted = System.nanoTime() - YOUNG.toNanos() * 2;

    /**
     * Counts a replica's death after {@code lifetime} (for a start that failed, the time the start took).
     *
     * @return how long its replacement waits
     */
    public Duration died(Duration lifetime) {
        long now = System.nanoTime();
        if (lifetime.compareTo(YOUNG) >= 0) {
            youngDeaths = 1;
        } else if (now - lifetime.toNanos() >= lastCounted) {
            youngDeaths++;
        } // else: started before the last counted death, it died beside that one
        lastCounted = now;
        Duration wait = Duration.ZERO;
        if (youngDeaths > 1) {
            Duration doubled = FIRST.multipliedBy(1L << Math.min(youngDeaths - 2, 30));
            wait = doubled.compareTo(LONGEST) > 0 ? LONGEST : doubled;
        }
        notBefore = Math.max(notBefore, now + wait.toNanos());
        return wait;
    }

    /** A replica stopped after {@code lifetime} without dying (idle, or the revision stopped serving). */
    public void stopped(Duration lifetime) {
        if (lifetime.compareTo(YOUNG) >= 0) {
            youngDeaths = 0;
            notBefore = System.nanoTime();
        }
    }

    /** Whether replicas are dying young in a row, the last within a minute: starts are then made one at a time. */
    public boolean looping() {
        return youngDeaths > 1 && System.nanoTime() - lastCounted < YOUNG.toNanos();
    }

    /**
     * A start was refused for want of room (the environment at its share): no crash of its code, but the next start
     * waits {@link #NO_ROOM} all the same, or the pool would ask again at once, and again, for as long as there is none.
     */
    public void refusedForRoom() {
        notBefore = Math.max(notBefore, System.nanoTime() + NO_ROOM.toNanos());
    }

    /** How long a start must still wait, in nanoseconds; zero or less when it may start now. */
    public long waitNanos() {
        return notBefore - System.nanoTime();
    }

    /** Says why starts wait, for a status message or an error, or nothing when they do not. */
    public String reason() {
        long wait = waitNanos();
        if (wait <= 0) {
            return "";
        }
        long seconds = (wait + 999_999_999L) / 1_000_000_000L;
        return youngDeaths > 1
                ? " (" + youngDeaths + " replicas in a row died within " + YOUNG.toSeconds()
                        + " s of their start: the next starts in " + seconds + " s)"
                : " (the next start is in " + seconds + " s)";
    }
}
