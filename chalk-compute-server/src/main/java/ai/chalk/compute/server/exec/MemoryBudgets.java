package ai.chalk.compute.server.exec;

/**
 * The server-wide limits on what clients can make the server hold in memory on their behalf. Without them an
 * unauthenticated client could exhaust the heap with detached sessions (each buffering output), stdin that a
 * process never reads, or many one-shot commands collecting output at once. Of session output, stdin and collected
 * output one environment holds at most half ({@link EnvironmentBytes}; of stdin, at least one largest message): a tenant
 * that filled one of them refused every other environment's sessions, stdin or commands.
 *
 * @param sessionOutput   output buffered by v2 sessions for clients that re-attach; reserved whole when a session
 *                        opens (its buffer size), shrunk to what it holds when it finishes
 * @param stdin           stdin received from clients and not yet taken by the process
 * @param collectedOutput output {@code ExecCommand} collects to return whole
 * @param receivedMessages request messages the TCP port is still receiving ({@link ReceivedMessages})
 * @param receivedFromReplicas the same on the replicas' socket: a budget of its own, so that deployed code cannot hold
 *                             back the uploads of the server's clients, nor they the calls of functions
 * @param evaluationRuns  the input rows and results of the evaluation runs under way, held until each run's result file
 *                        is written (a dataset's size and a task's answers are the tenant's to choose)
 * @param volumeFileReads volume files read for GetFile, held until the call is over (a client that does not read its
 *                        answer keeps it queued in the server)
 * @param functionCalls   the arguments of function calls under way or queued, held until each call ends: a call waits
 *                        for a replica with room as long as its function's timeout, and a tenant whose function never
 *                        answers made every call it sent wait, holding up to 33 MiB each
 * @param unsentAnswers   the answers of unary calls sent and not yet read by their clients, held until each call is
 *                        over ({@code grpc.UnsentAnswers}): gRPC keeps what a client does not read in the server
 */
public record MemoryBudgets(
        EnvironmentBytes sessionOutput,
        EnvironmentBytes stdin,
        EnvironmentBytes collectedOutput,
        ByteBudget receivedMessages,
        ByteBudget receivedFromReplicas,
        ByteBudget evaluationRuns,
        ByteBudget volumeFileReads,
        EnvironmentBytes functionCalls,
        EnvironmentBytes unsentAnswers) {

    /** The largest message a client may send (ComputeServer.MAX_MESSAGE_BYTES). */
    private static final long LARGEST_MESSAGE = 33L << 20;

    /**
     * Budgets as fractions of the heap: a quarter for session output, a sixteenth for stdin, an eighth for output, an
     * eighth each for messages being received on the TCP port and on the replicas' socket (but room for at least two
     * of the largest), an eighth for evaluation runs, an eighth for volume files read, an eighth for function calls'
     * arguments and an eighth for answers not yet read (each with room for two of the largest, one environment holding
     * half).
     */
    public static MemoryBudgets ofHeap(long maxHeapBytes) {
        return withReceivedMessages(
                new ByteBudget("buffered session output", maxHeapBytes / 4),
                new ByteBudget("unread stdin", maxHeapBytes / 16),
                new ByteBudget("collected ExecCommand output", maxHeapBytes / 8),
                new ByteBudget("evaluation runs' rows and results", maxHeapBytes / 8),
                new ByteBudget("volume files read for GetFile", Math.max(2 * LARGEST_MESSAGE, maxHeapBytes / 8)),
                functionCalls(Math.max(2 * LARGEST_MESSAGE, maxHeapBytes / 8)),
                unsentAnswers(Math.max(2 * (LARGEST_MESSAGE + (1 << 20)), maxHeapBytes / 8)),
                Math.max(2 * LARGEST_MESSAGE, maxHeapBytes / 8));
    }

    /** A budget of {@code bytes} for function calls' arguments, one environment holding half. */
    public static EnvironmentBytes functionCalls(long bytes) {
        return new EnvironmentBytes(new ByteBudget("function calls' arguments", bytes));
    }

    /**
     * A budget of {@code bytes} for answers sent and not yet read, one environment holding half, or at least one
     * largest answer: a worker's 33 MiB result, and the few bytes of the message around it.
     */
    public static EnvironmentBytes unsentAnswers(long bytes) {
        return new EnvironmentBytes(
                new ByteBudget("answers not yet read by their clients", bytes), LARGEST_MESSAGE + (1 << 20));
    }

    /** These budgets, with {@code receivedBytes} for the messages being received on each of the two transports. */
    public static MemoryBudgets withReceivedMessages(
            ByteBudget sessionOutput,
            ByteBudget stdin,
            ByteBudget collectedOutput,
            ByteBudget evaluationRuns,
            ByteBudget volumeFileReads,
            EnvironmentBytes functionCalls,
            EnvironmentBytes unsentAnswers,
            long receivedBytes) {
        return new MemoryBudgets(
                new EnvironmentBytes(sessionOutput),
                new EnvironmentBytes(stdin, LARGEST_MESSAGE), // ExecCommand's stdin comes whole in its request
                new EnvironmentBytes(collectedOutput),
                new ByteBudget("messages being received", receivedBytes),
                new ByteBudget("messages being received from replicas", receivedBytes),
                evaluationRuns,
                volumeFileReads,
                functionCalls,
                unsentAnswers);
    }
}
