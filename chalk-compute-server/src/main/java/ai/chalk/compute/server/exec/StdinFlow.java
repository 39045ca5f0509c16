package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.error.ComputeException;
import io.grpc.stub.ServerCallStreamObserver;

/**
 * Inbound flow control for stdin: a call asks for the client's next message at once while less
 * than {@link #BOUND} bytes wait to be written, so signals and EOF keep flowing; past it, the
 * next message is asked for only when the process has taken its input. The call's thread never
 * blocks on a full pipe, so cancelling a call always works; a signal sent after more than the bound
 * of unread input waits for it, as the client's messages arrive in order. Server-wide, stdin not yet
 * taken by its process is bounded by a {@link ByteBudget}, of which one environment holds at most half: one large
 * message per call, times many calls, must not fill the heap, nor one tenant's the others' room.
 */
public final class StdinFlow {

    /** Most stdin bytes queued for one process before the client is made to wait. */
    public static final long BOUND = 1 << 20;

    private StdinFlow() {}

    /**
     * Queues {@code data} for the process and asks the call for its next message when there is room. The bytes
     * count against the server's stdin budget until the process has taken them; past it, RESOURCE_EXHAUSTED.
     */
    public static void write(
            ProcessRun run, byte[] data, ServerCallStreamObserver<?> call, EnvironmentBytes.Account budget) {
        EnvironmentBytes.Refusal refusal = budget.tryReserve(data.length);
        if (refusal != null) {
            throw refused(data.length, budget, refusal);
        }
        var written = run.writeStdin(data);
        written.whenComplete((ignored, failure) -> budget.release(data.length));
        if (run.pendingStdinBytes() < BOUND) {
            call.request(1);
        } else {
            written.whenComplete((ignored, failure) -> call.request(1));
        }
    }

    /** RESOURCE_EXHAUSTED for {@code bytes} of stdin the budget cannot take, saying why and what to do. */
    public static ComputeException refused(long bytes, EnvironmentBytes.Account budget, EnvironmentBytes.Refusal why) {
        return ComputeException.exhausted(bytes + " bytes of stdin refused: " + budget.explain(why) + " (stdin that"
                + " processes have not read yet); send stdin in pieces as the process reads it (the"
                + " server asks for more when it has written what it got) rather than in one large message");
    }
}
