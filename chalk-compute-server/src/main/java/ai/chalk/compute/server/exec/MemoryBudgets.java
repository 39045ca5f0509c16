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
 */
public record MemoryBudgets(ByteBudget sessionOutput, ByteBudget stdin, ByteBudget collectedOutput) {

    /** Budgets as fractions of the heap: a quarter for session output, a sixteenth for stdin, an eighth for output. */
    public static MemoryBudgets ofHeap(long maxHeapBytes) {
        return new MemoryBudgets(
                new ByteBudget("buffered session output", maxHeapBytes / 4),
                new ByteBudget("unread stdin", maxHeapBytes / 16),
                new ByteBudget("collected ExecCommand output", maxHeapBytes / 8));
    }
}
