package ai.chalk.compute.server.session;

import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.OutputData;
import com.google.protobuf.ByteString;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The numbered events of one session, kept so a client that re-attaches can replay what it
 * missed. Output is bounded by {@code capacityBytes}: past it the oldest output events are
 * dropped, and a reader that asks for them learns exactly which were lost.
 */
public final class SessionLog {

    /** Default bound of buffered output per session. */
    public static final long DEFAULT_CAPACITY_BYTES = 8L << 20;

    /** One numbered event. */
    public record Entry(long seq, OpenSessionResponse event) {}

    /** What a reader gets next: an event, or the news that events were dropped before it. */
    public sealed interface Next {}

    /** The next event to send. */
    public record Event(Entry entry) implements Next {}

    /**
     * Events {@code firstSeq..lastSeq} were dropped before the reader got them.
     *
     * @param bytes output bytes dropped in that range
     */
    public record Gap(long firstSeq, long lastSeq, long bytes) implements Next {}

    private final long capacityBytes;
    private final Deque<Entry> entries = new ArrayDeque<>();
    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
    private long lastSeq;
    private long bufferedBytes;
    private long droppedThroughSeq;
    private long droppedBytes;
    private boolean finished;

    public SessionLog(long capacityBytes) {
        this.capacityBytes = capacityBytes;
    }

    /**
     * Appends an event, numbering it, and wakes readers. An event after the terminal one is dropped: output that a
     * process the command left in the background writes after the session ended (its pipe outlives the command) would
     * otherwise fill a buffer the server no longer reserves for the session.
     *
     * @return the event's number; the terminal event's when it was dropped
     */
    public long append(OpenSessionResponse event, boolean terminal) {
        long seq;
        synchronized (this) {
            if (finished) {
                return lastSeq;
            }
            long size = size(event);
            if (size > capacityBytes) {
                // one chunk larger than the whole buffer (the pumps read up to 256 KiB at a time): keep its
                // tail and number its head as an event dropped on arrival, so the end of the output
                // survives the terminal event and a reader is told of the loss (a copy: a substring would
                // keep the whole chunk's array alive, more than the buffer may hold)
                droppedBytes += bufferedBytes + (size - capacityBytes);
                entries.clear();
                bufferedBytes = 0;
                droppedThroughSeq = ++lastSeq;
                OutputData data = event.getOutputData();
                ByteString tail = ByteString.copyFrom(
                        data.getData().substring((int) (size - capacityBytes)).toByteArray());
                event = event.toBuilder()
                        .setOutputData(data.toBuilder().setData(tail))
                        .build();
            }
            seq = ++lastSeq;
            entries.addLast(new Entry(seq, event.toBuilder().setSeq(seq).build()));
            bufferedBytes += size(event);
            finished |= terminal;
            // drop oldest output, never the terminal event, so a late reader always learns how it ended
            while (bufferedBytes > capacityBytes && entries.size() > 1) {
                Entry dropped = entries.removeFirst();
                long bytes = size(dropped.event());
                bufferedBytes -= bytes;
                droppedBytes += bytes;
                droppedThroughSeq = dropped.seq();
            }
        }
        listeners.forEach(Runnable::run);
        return seq;
    }

    private static long size(OpenSessionResponse event) {
        return event.hasOutputData() ? event.getOutputData().getData().size() : 0;
    }

    /** What follows {@code afterSeq}: a gap when events after it were dropped, the next event, or null. */
    public synchronized Next next(long afterSeq) {
        if (afterSeq < droppedThroughSeq) {
            return new Gap(afterSeq + 1, droppedThroughSeq, droppedBytes);
        }
        for (Entry e : entries) {
            if (e.seq() > afterSeq) {
                return new Event(e);
            }
        }
        return null;
    }

    /** The number of the newest event (0 before any). */
    public synchronized long lastSeq() {
        return lastSeq;
    }

    /** Whether the terminal event has been appended. */
    public synchronized boolean finished() {
        return finished;
    }

    /** Output bytes held now. */
    public synchronized long bufferedBytes() {
        return bufferedBytes;
    }

    /** Total output bytes dropped so far. */
    public synchronized long droppedBytes() {
        return droppedBytes;
    }

    void addListener(Runnable listener) {
        listeners.add(listener);
    }

    void removeListener(Runnable listener) {
        listeners.remove(listener);
    }
}
