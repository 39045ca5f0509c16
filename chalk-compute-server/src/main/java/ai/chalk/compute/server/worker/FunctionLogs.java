package ai.chalk.compute.server.worker;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The recent output of every function's replicas, in memory and bounded: at most {@link #LINES_PER_FUNCTION} lines
 * per function and {@link #CHARS_PER_ENVIRONMENT} per environment (the oldest dropped first), each cut at
 * {@link #MAX_LINE_CHARS} characters. A line a worker tagged with
 * the function whose call wrote it ({@link #TAG_PREFIX}{@code name] }, see docs/functions-protocol.md) is that
 * function's; an untagged one (the worker starting, a thread of the function's own) is every served function's.
 * Thread-safe.
 */
public final class FunctionLogs {

    /** How a worker marks a line written while a call of a function ran: {@code [chalk-function NAME] text}. */
    public static final String TAG_PREFIX = "[chalk-function ";

    /** Lines kept per function. */
    public static final int LINES_PER_FUNCTION = 1000;

    /** Characters kept of one line. */
    public static final int MAX_LINE_CHARS = 4096;

    /**
     * Characters kept for one environment, all its functions' lines together (a line costs its text and
     * {@link #LINE_OVERHEAD_CHARS}), the oldest dropped first. A deployment names as many functions as it likes, and its
     * workers tag their lines with any of them: with a bound per function only, one deployment of 15,000 names writing
     * 1,000 long lines to each held about 120 GB of the server's heap.
     */
    public static final long CHARS_PER_ENVIRONMENT = 8L << 20;

    /** What a kept line costs beyond its text: its record, time, replica and stream. */
    static final int LINE_OVERHEAD_CHARS = 64;

    /**
     * One line a replica wrote.
     *
     * @param id       increases with every line kept, server-wide
     * @param time     when the server read it
     * @param replica  the worker's id
     * @param function the function whose call wrote it, if the worker said
     * @param stream   {@code stdout} or {@code stderr}
     * @param text     the line, without its end of line
     */
    public record Line(long id, Instant time, String replica, Optional<String> function, String stream, String text) {}

    /**
     * A line split into its tag and its text.
     *
     * @param function the tagged function, if the line had a tag
     * @param text     the rest
     */
    public record Tagged(Optional<String> function, String text) {

        /** Reads a line's tag, if it has one. */
        public static Tagged of(String line) {
            if (line.startsWith(TAG_PREFIX)) {
                int end = line.indexOf("] ", TAG_PREFIX.length());
                if (end > TAG_PREFIX.length()) {
                    return new Tagged(Optional.of(line.substring(TAG_PREFIX.length(), end)), line.substring(end + 2));
                }
            }
            return new Tagged(Optional.empty(), line);
        }
    }

    private final Map<String, Deque<Line>> byFunction = new ConcurrentHashMap<>();
    /** Each environment's kept lines in the order they came, with the functions they were kept for; under this. */
    private final Map<String, Kept> byEnvironment = new java.util.HashMap<>();

    private final Map<String, ServerLogRate> serverLogRates = new ConcurrentHashMap<>();

    private long lastId;

    /** An environment's lines, oldest first, and what they cost. */
    private static final class Kept {
        final Deque<KeptLine> order = new ArrayDeque<>();
        long chars;
    }

    private record KeptLine(Line line, String environment, List<String> functions) {}

    /**
     * Keeps a line of a replica.
     *
     * @param environment the environment of the functions it serves
     * @param served      the functions it serves
     * @param replica     the worker's id
     * @param stream      {@code stdout} or {@code stderr}
     * @param tagged      the line
     * @return the line as kept
     */
    public Line add(String environment, List<String> served, String replica, String stream, Tagged tagged) {
        String text = tagged.text().length() > MAX_LINE_CHARS
                ? tagged.text().substring(0, MAX_LINE_CHARS) + "..."
                : tagged.text();
        Optional<String> function = tagged.function().filter(served::contains);
        // numbered and kept in one step: a replica's stdout and stderr are read on two threads, and a line numbered
        // first but kept second broke the order the ids promise (seen: 1 ... 6, 8, 7)
        synchronized (this) {
            Line line = new Line(++lastId, Instant.now(), replica, function, stream, text);
            List<String> functions = function.map(List::of).orElse(served);
            for (String name : functions) {
                Deque<Line> lines = byFunction.computeIfAbsent(key(environment, name), k -> new ArrayDeque<>());
                synchronized (lines) {
                    if (lines.size() == LINES_PER_FUNCTION) {
                        lines.removeFirst();
                    }
                    lines.addLast(line);
                }
            }
            Kept kept = byEnvironment.computeIfAbsent(environment, e -> new Kept());
            kept.order.addLast(new KeptLine(line, environment, functions));
            kept.chars += cost(line);
            while (kept.chars > CHARS_PER_ENVIRONMENT) {
                KeptLine oldest = kept.order.removeFirst();
                kept.chars -= cost(oldest.line());
                drop(oldest);
            }
            return line;
        }
    }

    private static long cost(Line line) {
        return line.text().length() + LINE_OVERHEAD_CHARS;
    }

    /**
     * Drops an environment's oldest line from the functions it was kept for, where a function's own bound has not
     * dropped it already (their lines are in the same order, so it is first there if it is there at all); a function
     * left with no line goes.
     */
    private void drop(KeptLine oldest) {
        for (String name : oldest.functions()) {
            String key = key(oldest.environment(), name);
            Deque<Line> lines = byFunction.get(key);
            if (lines == null) {
                continue;
            }
            synchronized (lines) {
                if (lines.peekFirst() == oldest.line()) {
                    lines.removeFirst();
                }
                if (lines.isEmpty()) {
                    byFunction.remove(key, lines);
                }
            }
        }
    }

    /**
     * A function's most recent lines, oldest first.
     *
     * @param limit at most this many
     * @param since only those read at or after this time, if given
     */
    public List<Line> recent(String environment, String function, int limit, Optional<Instant> since) {
        Deque<Line> lines = byFunction.get(key(environment, function));
        if (lines == null) {
            return List.of();
        }
        List<Line> copy;
        synchronized (lines) {
            copy = new ArrayList<>(lines);
        }
        List<Line> kept = since.isEmpty()
                ? copy
                : copy.stream().filter(l -> !l.time().isBefore(since.get())).toList();
        return List.copyOf(kept.subList(Math.max(0, kept.size() - limit), kept.size()));
    }

    private static String key(String environment, String function) {
        return environment + "\u0000" + function;
    }

    /** How many lines of the environment's replicas go to the server's log: one rate for all of them. */
    ServerLogRate serverLogRate(String environment) {
        return serverLogRates.computeIfAbsent(environment, e -> new ServerLogRate());
    }
}
