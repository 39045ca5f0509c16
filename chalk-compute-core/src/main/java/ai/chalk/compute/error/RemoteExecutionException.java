package ai.chalk.compute.error;

import ai.chalk.compute.proto.common.v1.ChalkError;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import java.util.Optional;

/**
 * A deployed function failed while running a call: its own code threw (status {@code UNKNOWN}, with the remote
 * exception's type, message and traceback), or the worker running it died during the call ({@code UNAVAILABLE}).
 * Such failures are not retried.
 * <pre>{@code
 * try {
 *     remote.call("text");
 * } catch (RemoteExecutionException e) {
 *     System.err.println(e.exceptionType() + ": " + e.remoteMessage());
 *     System.err.println(e.remoteTraceback());
 *     e.callId().ifPresent(id -> System.err.println("call " + id));
 * }
 * }</pre>
 */
public class RemoteExecutionException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /** The trailer carrying the serialised {@code chalk.common.v1.ChalkError} of a user failure. */
    public static final Metadata.Key<ChalkError> ERROR_TRAILER =
            Metadata.Key.of("chalk-error-bin", ProtoUtils.metadataMarshaller(ChalkError.getDefaultInstance()));
    /** The trailer carrying the call's id, added by the server. */
    public static final Metadata.Key<String> CALL_ID_TRAILER =
            Metadata.Key.of("chalk-call-id", Metadata.ASCII_STRING_MARSHALLER);
    /** The trailer carrying the call's trace id, when a trace is active. */
    public static final Metadata.Key<String> TRACE_ID_TRAILER =
            Metadata.Key.of("chalk-trace-id", Metadata.ASCII_STRING_MARSHALLER);

    private final String exceptionType;
    private final String remoteMessage;
    private final String remoteTraceback;
    private final String internalTraceback;
    private final String callId;
    private final String traceId;
    private transient String annotatedTraceback; // computed once, on first use

    /**
     * Creates the error.
     *
     * @param statusCode        the call's status code
     * @param serverMessage     the status description
     * @param exceptionType     the remote exception's class name; empty when the function did not throw
     * @param remoteMessage     the remote exception's message
     * @param remoteTraceback   the remote exception's frames in the user's code
     * @param internalTraceback the full remote trace, runtime frames included
     * @param callId            the call's id, or {@code null}
     * @param traceId           the call's trace id, or {@code null}
     * @param cause             the gRPC exception, or {@code null}
     */
    public RemoteExecutionException(
            Status.Code statusCode,
            String serverMessage,
            String exceptionType,
            String remoteMessage,
            String remoteTraceback,
            String internalTraceback,
            String callId,
            String traceId,
            Throwable cause) {
        super(statusCode, serverMessage, cause);
        this.exceptionType = nullToEmpty(exceptionType);
        this.remoteMessage = nullToEmpty(remoteMessage);
        this.remoteTraceback = nullToEmpty(remoteTraceback);
        this.internalTraceback = nullToEmpty(internalTraceback);
        this.callId = callId == null || callId.isEmpty() ? null : callId;
        this.traceId = traceId == null || traceId.isEmpty() ? null : traceId;
    }

    /**
     * Reads a failed call: a remote error when it is one, else the typed exception of its status.
     *
     * @param e the exception a stub threw
     * @return a {@code RemoteExecutionException} for a call whose function threw (trailer {@code chalk-error-bin}) or
     *         whose worker died ({@code UNAVAILABLE} naming the worker); otherwise {@link ChalkComputeException#from(Throwable)}
     */
    public static ChalkComputeException fromCall(Throwable e) {
        Status status = Status.fromThrowable(e);
        Metadata trailers = Status.trailersFromThrowable(e);
        if (!(e instanceof StatusRuntimeException) && !(e instanceof StatusException)) {
            return ChalkComputeException.from(e);
        }
        Optional<RemoteExecutionException> remote = from(status, trailers == null ? new Metadata() : trailers, e);
        return remote.isPresent() ? remote.get() : ChalkComputeException.from(e);
    }

    /**
     * Reads a remote failure from a call's status and trailers.
     *
     * @param status   the status the call ended with
     * @param trailers its trailers
     * @param cause    the gRPC exception, or {@code null}
     * @return the error, or empty when the status is not a remote execution failure
     */
    public static Optional<RemoteExecutionException> from(Status status, Metadata trailers, Throwable cause) {
        String description = status.getDescription() == null ? "" : status.getDescription();
        ChalkError error = trailers.get(ERROR_TRAILER);
        boolean workerDied = status.getCode() == Status.Code.UNAVAILABLE && description.startsWith("worker ");
        if (error == null && !workerDied) {
            return Optional.empty();
        }
        String callId = trailers.get(CALL_ID_TRAILER);
        String traceId = trailers.get(TRACE_ID_TRAILER);
        if (error == null) {
            return Optional.of(new RemoteExecutionException(
                    status.getCode(), description, "", description, "", "", callId, traceId, cause));
        }
        return Optional.of(of(status.getCode(), description, error, callId, traceId, cause));
    }

    /**
     * The error described by a {@code ChalkError}, as reported by a polled asynchronous call.
     *
     * @param statusCode    the status code to report
     * @param serverMessage the message to report; the error's own when empty
     * @param error         the error
     * @param callId        the call's id, or {@code null}
     * @param traceId       the trace id, or {@code null}
     * @param cause         the underlying exception, or {@code null}
     * @return the error
     */
    public static RemoteExecutionException of(
            Status.Code statusCode,
            String serverMessage,
            ChalkError error,
            String callId,
            String traceId,
            Throwable cause) {
        String message = serverMessage == null || serverMessage.isEmpty() ? error.getMessage() : serverMessage;
        if (!error.hasException()) {
            return new RemoteExecutionException(
                    statusCode, message, "", error.getMessage(), "", "", callId, traceId, cause);
        }
        var exception = error.getException();
        return new RemoteExecutionException(
                statusCode,
                message,
                exception.getKind(),
                exception.getMessage(),
                exception.getStacktrace(),
                exception.getInternalStacktrace(),
                callId,
                traceId,
                cause);
    }

    /** The remote exception's class name, such as {@code java.lang.IllegalStateException}; empty when none threw. */
    public String exceptionType() {
        return exceptionType;
    }

    /** The remote exception's message. */
    public String remoteMessage() {
        return remoteMessage;
    }

    /** The remote exception and its causes with their frames in the function's code. */
    public String remoteTraceback() {
        return remoteTraceback;
    }

    /**
     * The remote traceback with numbered source lines under each frame whose source the caller has (see
     * {@link SourceContext}: {@code CHALK_SOURCE_PATH}, else the working directory's {@code src/main/java} and
     * {@code src/test/java}); {@link #getMessage()} shows it.
     *
     * @return the traceback, annotated where the source was found
     */
    public String remoteTracebackWithSource() {
        String annotated = annotatedTraceback;
        if (annotated == null) {
            annotated = remoteTraceback.isEmpty()
                    ? ""
                    : SourceContext.fromEnv(System.getenv()).annotate(remoteTraceback);
            annotatedTraceback = annotated;
        }
        return annotated;
    }

    /** The full remote trace, runtime frames included, for diagnosing the runtime itself. */
    public String internalTraceback() {
        return internalTraceback;
    }

    /** The call's id, when the call path supplied one. */
    public Optional<String> callId() {
        return Optional.ofNullable(callId);
    }

    /** The call's trace id, when a trace was active. */
    public Optional<String> traceId() {
        return Optional.ofNullable(traceId);
    }

    /** A readable multi-line description: the remote exception, its traceback, and the call's ids. */
    @Override
    public String getMessage() {
        StringBuilder out = new StringBuilder(super.getMessage());
        if (!exceptionType.isEmpty()) {
            out.append("\nremote ").append(exceptionType);
            if (!remoteMessage.isEmpty()) {
                out.append(": ").append(remoteMessage);
            }
        }
        if (!remoteTraceback.isEmpty()) {
            out.append("\nremote traceback:\n")
                    .append(remoteTracebackWithSource().stripTrailing());
        }
        callId().ifPresent(id -> out.append("\ncall id: ").append(id));
        traceId().ifPresent(id -> out.append("\ntrace id: ").append(id));
        return out.toString();
    }

    private static String nullToEmpty(String s) {
        return s == null ? "" : s;
    }
}
