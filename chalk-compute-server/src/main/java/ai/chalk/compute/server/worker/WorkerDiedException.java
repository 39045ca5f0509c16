package ai.chalk.compute.server.worker;

/** A replica that could not start or stopped answering; the message says which and why, with its last output. */
public final class WorkerDiedException extends Exception {

    public WorkerDiedException(String message) {
        super(message);
    }
}
