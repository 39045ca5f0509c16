package ai.chalk.compute.server.http;

import ai.chalk.compute.server.threads.DaemonThreads;
import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.HttpExchange;
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
 * The threads that serve the HTTP port's exchanges, with a deadline on reading a request's headers. The JDK's server
 * reads a request's line and headers on the thread that is to serve it, blocking and with no time limit: a peer without
 * credentials that opened 16 connections and sent half a request on each held every thread, and the port answered no
 * one (the JWKS, every transfer) for as long as it kept them open. A request whose headers have not all arrived within
 * the deadline has its thread interrupted, which closes its connection (a blocking channel read is interruptible); once
 * its headers are read, an exchange has all the time its transfer takes.
 */
final class ExchangeThreads implements Executor, AutoCloseable {

    /** How long a request's line and headers may take to arrive: an honest client sends them at once. */
    static final Duration HEADER_DEADLINE = Duration.ofSeconds(10);

    private final ExecutorService pool;
    private final ScheduledExecutorService watch;
    private final long deadlineNanos;
    private final Set<Turn> reading = ConcurrentHashMap.newKeySet();
    private final ThreadLocal<Turn> current = new ThreadLocal<>();

    /**
     * @param threads        exchanges served at once; more wait for a thread
     * @param headerDeadline how long a request's headers may take to arrive
     */
    ExchangeThreads(int threads, Duration headerDeadline) {
        this.pool = Executors.newFixedThreadPool(threads, DaemonThreads.numbered("chalk-compute-http"));
        this.watch = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("chalk-compute-http-deadline"));
        this.deadlineNanos = headerDeadline.toNanos();
        long every = Math.max(10, headerDeadline.toMillis() / 10);
        watch.scheduleWithFixedDelay(this::cutLateHeaders, every, every, TimeUnit.MILLISECONDS);
    }

    /** Runs one exchange of the JDK's server: it reads the request's headers first, then calls the handler. */
    @Override
    public void execute(Runnable exchange) {
        pool.execute(() -> {
            Turn turn = new Turn(Thread.currentThread(), System.nanoTime());
            current.set(turn);
            reading.add(turn);
            try {
                exchange.run();
            } finally {
                reading.remove(turn);
                current.remove();
                turn.end();
                // an interrupt meant for this exchange's header read must not reach the next exchange on this thread
                Thread.interrupted();
            }
        });
    }

    /** The filter every context of the port has: it marks the headers read before the handler runs. */
    Filter headersRead() {
        return new Filter() {
            @Override
            public void doFilter(HttpExchange exchange, Chain chain) throws IOException {
                Turn turn = current.get();
                if (turn != null) {
                    reading.remove(turn);
                    if (!turn.handle()) {
                        throw new IOException("the request's headers took longer than " + HEADER_DEADLINE);
                    }
                }
                chain.doFilter(exchange);
            }

            @Override
            public String description() {
                return "marks the request's headers read (the header deadline is over)";
            }
        };
    }

    private void cutLateHeaders() {
        long now = System.nanoTime();
        for (Turn turn : reading) {
            if (now - turn.started >= deadlineNanos) {
                reading.remove(turn);
                turn.cut();
            }
        }
    }

    @Override
    public void close() {
        watch.shutdownNow();
        pool.shutdownNow();
    }

    /** One exchange on its thread: reading its headers, then handled, or cut short; ended when its thread is free. */
    private static final class Turn {
        private final Thread thread;
        private final long started;
        private State state = State.READING; // guarded by this

        private enum State {
            READING,
            HANDLING,
            CUT,
            ENDED
        }

        Turn(Thread thread, long started) {
            this.thread = thread;
            this.started = started;
        }

        /** Whether the handler may run: false when the deadline cut the read first. */
        synchronized boolean handle() {
            if (state != State.READING) {
                return false;
            }
            state = State.HANDLING;
            return true;
        }

        /** Interrupts the header read, only while it is one: the thread never gets an interrupt meant for another. */
        synchronized void cut() {
            if (state == State.READING) {
                state = State.CUT;
                thread.interrupt();
            }
        }

        synchronized void end() {
            state = State.ENDED;
        }
    }
}
