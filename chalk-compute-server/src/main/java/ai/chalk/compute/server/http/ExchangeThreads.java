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
 * has all the time its bytes take.
 */
final class ExchangeThreads implements Executor, AutoCloseable {

    /**
     * How long an exchange may take until its handler grants it more: an honest client sends its headers at once, and
     * the port's documents and refusals are small.
     */
    static final Duration DEADLINE = Duration.ofSeconds(10);

    private final ExecutorService pool;
    private final ScheduledExecutorService watch;
    private final Duration deadline;
    private final Set<Turn> timed = ConcurrentHashMap.newKeySet();
    private final ThreadLocal<Turn> current = new ThreadLocal<>();

    /**
     * @param threads  exchanges served at once; more wait for a thread
     * @param deadline how long an exchange may take until its handler grants it more
     */
    ExchangeThreads(int threads, Duration deadline) {
        this.pool = Executors.newFixedThreadPool(threads, DaemonThreads.numbered("chalk-compute-http"));
        this.watch = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("chalk-compute-http-deadline"));
        this.deadline = deadline;
        long every = Math.max(10, deadline.toMillis() / 10);
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
            if (!turn.grant()) {
                throw new IOException("the exchange took longer than " + deadline + " before it was granted more");
            }
            timed.remove(turn);
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
        }

        /** Whether the exchange may go on without a deadline: false when the deadline cut it first. */
        synchronized boolean grant() {
            if (state != State.TIMED) {
                return false;
            }
            state = State.GRANTED;
            return true;
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
