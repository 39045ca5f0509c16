package ai.chalk.compute.server.grpc;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.store.StoreException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where failures become gRPC statuses. Runs a unary call body and reports failures as a status: the
 * status of a {@link ComputeException} (what managers and runtimes throw) by its kind, the status a service chose
 * (with its trailers, such as structured error details), RESOURCE_EXHAUSTED or UNAVAILABLE when the store cannot
 * write (a full disk, a failing database), or INTERNAL with a short message for anything unexpected (logged here with
 * its stack trace, never sent to the client).
 */
public final class StatusErrors {

    private static final Logger log = LoggerFactory.getLogger(StatusErrors.class);

    private StatusErrors() {}

    /** Completes {@code observer} with the body's result or its failure. */
    public static <T> void unary(StreamObserver<T> observer, Supplier<T> body) {
        T result;
        try {
            result = body.get();
        } catch (RuntimeException e) {
            // a status the service chose keeps its trailers: error details travel in them
            observer.onError(
                    toStatus(e).asRuntimeException(e instanceof StatusRuntimeException sre ? sre.getTrailers() : null));
            return;
        }
        observer.onNext(result);
        observer.onCompleted();
    }

    /** The status to report for an exception; also for a {@link ComputeException} a service caught itself. */
    public static Status toStatus(Throwable e) {
        if (e instanceof StatusRuntimeException sre) {
            return sre.getStatus();
        }
        if (e instanceof io.grpc.StatusException se) {
            return se.getStatus();
        }
        if (e instanceof ComputeException ce) {
            Status status = switch (ce.kind()) {
                case NOT_FOUND -> Status.NOT_FOUND;
                case ALREADY_EXISTS -> Status.ALREADY_EXISTS;
                case INVALID -> Status.INVALID_ARGUMENT;
                case REFUSED -> Status.FAILED_PRECONDITION;
                case EXHAUSTED -> Status.RESOURCE_EXHAUSTED;
                case UNAVAILABLE -> Status.UNAVAILABLE;
            };
            return status.withDescription(ce.getMessage());
        }
        if (e instanceof StoreException se && se.kind() != StoreException.Kind.FAILED) {
            // the database logged the failure once when it began; each request only says what it means for it
            return (se.kind() == StoreException.Kind.DISK_FULL ? Status.RESOURCE_EXHAUSTED : Status.UNAVAILABLE)
                    .withDescription(se.getMessage());
        }
        if (e instanceof java.util.concurrent.CompletionException
                && (e.getCause() instanceof StoreException
                        || e.getCause() instanceof ComputeException
                        || e.getCause() instanceof StatusRuntimeException)) {
            return toStatus(e.getCause());
        }
        log.error("Unexpected server error", e);
        return Status.INTERNAL.withDescription(
                "internal server error (" + e.getClass().getSimpleName() + "); the server log has the details");
    }
}
