package ai.chalk.compute.server.exec;

/**
 * The server-wide limits on what clients can make the server hold in memory on their behalf. Without them an
 * unauthenticated client could exhaust the heap with detached sessions (each buffering output), stdin that a
 * process never reads, or many one-shot commands collecting output at once.
 *
 * @param sessionOutput   output buffered by v2 sessions for clients that re-attach; reserved whole when a session
 *                        opens (its buffer size), shrunk to what it holds when it finishes
 * @param stdin           stdin received from clients and not yet taken by the process
 * @param collectedOutput output {@code ExecCommand} collects to return whole
 * @param receivedMessages request messages the network transport is still receiving ({@link ReceivedMessages})
 */
public record MemoryBudgets(
        ByteBudget sessionOutput, ByteBudget stdin, ByteBudget collectedOutput, ByteBudget receivedMessages) {

    /** The largest message a client may send (ComputeServer.MAX_MESSAGE_BYTES). */
    private static final long LARGEST_MESSAGE = 33L << 20;

    /**
     * Budgets as fractions of the heap: a quarter for session output, a sixteenth for stdin, an eighth for output, and
     * an eighth for messages being received, but room for at least two of the largest.
     */
    public static MemoryBudgets ofHeap(long maxHeapBytes) {
        return new MemoryBudgets(
                new ByteBudget("buffered session output", maxHeapBytes / 4),
                new ByteBudget("unread stdin", maxHeapBytes / 16),
                new ByteBudget("collected ExecCommand output", maxHeapBytes / 8),
                new ByteBudget("messages being received", Math.max(2 * LARGEST_MESSAGE, maxHeapBytes / 8)));
    }
}
