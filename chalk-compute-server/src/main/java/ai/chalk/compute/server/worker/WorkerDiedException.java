package ai.chalk.compute.server.worker;

/** A replica that could not start or stopped answering; the message says which and why, with its last output. */
public final class WorkerDiedException extends Exception {

    private final boolean refusedForRoom;

    public WorkerDiedException(String message) {
        this(message, false);
    }

    /** @param refusedForRoom the replica was not started: its environment had no room for another sandbox */
    public WorkerDiedException(String message, boolean refusedForRoom) {
        super(message);
        this.refusedForRoom = refusedForRoom;
    }

    /** Whether the replica was not started because its environment had no room for it (not its code's fault). */
    public boolean refusedForRoom() {
        return refusedForRoom;
    }
}
