package ai.chalk.compute.server.http;

import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.IOException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The threads that serve the HTTP port's exchanges, with a deadline on what a peer without credentials can make them
 * wait for. The JDK's server reads a request's line and headers on the thread that is to serve it, blocking and with
 * no time limit, and once a handler has answered it reads what is left of the request's body (up to 64 KiB) the same
 * way: a peer that opened 16 connections and sent half a request on each, or whole headers announcing a body it never
 * sent, held every thread, and the port answered no one (the JWKS, every transfer) for as long as it kept them open. An
 * exchange not done within the deadline has its thread interrupted, which closes its connection (a blocking channel
 * read or write is interruptible), unless its handler said it is a transfer its link granted ({@link #granted}), which
 * has all the time its bytes take as long as they move: a granted exchange whose bytes have not moved for
 * {@link #STALL} is cut too, and granted exchanges take at most all threads but {@link #KEPT_FOR_OTHERS}, past which
 * {@link #granted} refuses ({@link PortBusyException}). Before, a link holder that opened 16 downloads and read none
 * held every thread for good, and the port answered no one (the JWKS that others check identity tokens against, every
 * other tenant's transfers).
 */
final class ExchangeThreads implements Executor, AutoCloseable {

    /**
     * How long an exchange may take until its handler grants it more: an honest client sends its headers at once, and
     * the port's documents and refusals are small.
     */
    static final Duration DEADLINE = Duration.ofSeconds(10);

    /** How long a granted exchange's bytes may stand still: a client reading or sending at all moves them sooner. */
    static final Duration STALL = Duration.ofSeconds(60);

    /** Threads granted exchanges leave to the rest (documents, refusals, the checks of new links). */
    static final int KEPT_FOR_OTHERS = 4;

    /** {@link #granted} when the granted exchanges hold all the threads they may. */
    static final class PortBusyException extends IOException {
        PortBusyException(String message) {
            super(message);
        }
    }

    private final ExecutorService pool;
    private final ScheduledExecutorService watch;
    private final Duration deadline;
    private final Duration stall;
    private final int mostGranted;
    private final Set<Turn> timed = ConcurrentHashMap.newKeySet();
    private final Set<Turn> grantedTurns = ConcurrentHashMap.newKeySet();
    private final ThreadLocal<Turn> current = new ThreadLocal<>();

    /**
     * @param threads  exchanges served at once; more wait for a thread
     * @param deadline how long an exchange may take until its handler grants it more
     */
    ExchangeThreads(int threads, Duration deadline) {
        this(threads, deadline, STALL);
    }

    /** @param stall how long a granted exchange's bytes may stand still */
    ExchangeThreads(int threads, Duration deadline, Duration stall) {
        this.pool = Executors.newFixedThreadPool(threads, DaemonThreads.numbered("chalk-compute-http"));
        this.watch = DaemonThreads.timer("chalk-compute-http-deadline");
        this.deadline = deadline;
        this.stall = stall;
        this.mostGranted = Math.max(1, threads - KEPT_FOR_OTHERS);
        long every = Math.max(10, Math.min(deadline.toMillis(), stall.toMillis()) / 10);
        watch.scheduleWithFixedDelay(this::cutLate, every, every, TimeUnit.MILLISECONDS);
    }

    /** Runs one exchange of the JDK's server: it reads the request's headers first, then calls the handler. */
    @Override
    public void execute(Runnable exchange) {
        pool.execute(() -> {
            Turn turn = new Turn(Thread.currentThread(), System.nanoTime());
            current.set(turn);
            timed.add(turn);
            try {
                exchange.run();
            } finally {
                timed.remove(turn);
                grantedTurns.remove(turn);
                current.remove();
                turn.end();
                // an interrupt meant for this exchange must not reach the next exchange on this thread
                Thread.interrupted();
            }
        });
    }

    /**
     * The exchange this thread serves is a transfer its link granted: no deadline from now on.
     *
     * @throws IOException when the deadline cut it first (its connection is closed)
     */
    void granted() throws IOException {
        Turn turn = current.get();
        if (turn != null) {
            synchronized (grantedTurns) {
                if (grantedTurns.size() >= mostGranted) {
                    throw new PortBusyException("the server is serving " + grantedTurns.size() + " transfers, the most"
                            + " it serves at once: try again in a few seconds");
                }
                if (!turn.grant()) {
                    throw new IOException("the exchange took longer than " + deadline + " before it was granted more");
                }
                grantedTurns.add(turn);
            }
            timed.remove(turn);
        }
    }

    /** The granted exchange this thread serves moved bytes: its {@link #STALL} starts again. */
    void progressed() {
        Turn turn = current.get();
        if (turn != null) {
            turn.lastProgress = System.nanoTime();
        }
    }

    private void cutLate() {
        long now = System.nanoTime();
        long limit = deadline.toNanos();
        for (Turn turn : timed) {
            if (now - turn.started >= limit) {
                timed.remove(turn);
                turn.cut();
            }
        }
        long still = stall.toNanos();
        for (Turn turn : grantedTurns) {
            if (now - turn.lastProgress >= still) {
                grantedTurns.remove(turn);
                turn.cutStalled();
            }
        }
    }

    @Override
    public void close() {
        watch.shutdownNow();
        pool.shutdownNow();
    }

    /** One exchange on its thread: timed, then granted more or cut short; ended when its thread is free. */
    private static final class Turn {
        private final Thread thread;
        private final long started;
        private volatile long lastProgress;
        private State state = State.TIMED; // guarded by this

        private enum State {
            TIMED,
            GRANTED,
            CUT,
            ENDED
        }

        Turn(Thread thread, long started) {
            this.thread = thread;
            this.started = started;
            this.lastProgress = started;
        }

        /** Whether the exchange may go on without a deadline: false when the deadline cut it first. */
        synchronized boolean grant() {
            if (state != State.TIMED) {
                return false;
            }
            state = State.GRANTED;
            lastProgress = System.nanoTime();
            return true;
        }

        /** Interrupts a granted exchange whose bytes stand still; never one that has ended. */
        synchronized void cutStalled() {
            if (state == State.GRANTED) {
                state = State.CUT;
                thread.interrupt();
            }
        }

        /** Interrupts the exchange, only while it is timed: the thread never gets an interrupt meant for another. */
        synchronized void cut() {
            if (state == State.TIMED) {
                state = State.CUT;
                thread.interrupt();
            }
        }

        synchronized void end() {
            state = State.ENDED;
        }
    }
}
