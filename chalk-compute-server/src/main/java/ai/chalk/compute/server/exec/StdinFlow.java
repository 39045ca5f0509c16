package ai.chalk.compute.server.exec;

import io.grpc.stub.ServerCallStreamObserver;

/**
 * Inbound flow control for stdin: a call asks for the client's next message at once while less
 * than {@link #BOUND} bytes wait to be written, so signals and EOF keep flowing; past it, the
 * next message is asked for only when the process has taken its input. The call's thread never
 * blocks on a full pipe, so cancelling a call always works; a signal sent after more than the bound
 * of unread input waits for it, as the client's messages arrive in order.
 */
public final class StdinFlow {

    /** Most stdin bytes queued for one process before the client is made to wait. */
    public static final long BOUND = 1 << 20;

    private StdinFlow() {
    }

    /** Queues {@code data} for the process and asks the call for its next message when there is room. */
    public static void write(ProcessRun run, byte[] data, ServerCallStreamObserver<?> call) {
        var written = run.writeStdin(data);
        if (run.pendingStdinBytes() < BOUND) {
            call.request(1);
        } else {
            written.whenComplete((ignored, failure) -> call.request(1));
        }
    }
}
