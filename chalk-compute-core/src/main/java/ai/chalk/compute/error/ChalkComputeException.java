package ai.chalk.compute.error;

import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.util.Locale;
import java.util.Objects;

/**
 * The root of every failure reported by a Chalk Compute server or by the connection to it.
 *
 * <p>Each exception carries the gRPC {@linkplain #statusCode() status code} and the
 * {@linkplain #serverMessage() message the server sent}; the exception message contains both.
 * Catch a subclass to handle one kind of failure:
 * <pre>{@code
 * try {
 *     Sandbox sandbox = client.get(id);
 * } catch (SandboxNotFoundException e) {
 *     // the id is unknown to the server
 * }
 * }</pre>
 *
 * <p>A command that exits with a non-zero status is not a failure: it is reported in its
 * {@code ExecResult}. These exceptions mean the server could not do what was asked.
 */
public class ChalkComputeException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final Status.Code statusCode;
    private final String serverMessage;

    /**
     * Creates an exception for a failure with the given status code and server message.
     *
     * @param statusCode    the gRPC status code of the failure
     * @param serverMessage the message the server sent, or a description of a client-side failure
     * @param cause         the underlying exception, or {@code null}
     */
    public ChalkComputeException(Status.Code statusCode, String serverMessage, Throwable cause) {
        super(describe(statusCode, serverMessage), cause);
        this.statusCode = Objects.requireNonNull(statusCode, "statusCode");
        this.serverMessage = serverMessage == null ? "" : serverMessage;
    }

    /**
     * Creates an exception for a failure with the given status code and server message.
     *
     * @param statusCode    the gRPC status code of the failure
     * @param serverMessage the message the server sent
     */
    public ChalkComputeException(Status.Code statusCode, String serverMessage) {
        this(statusCode, serverMessage, null);
    }

    /** The gRPC status code of the failure, for example {@code NOT_FOUND}. */
    public Status.Code statusCode() {
        return statusCode;
    }

    /** The message the server sent with the failure, exactly as sent; empty when it sent none. */
    public String serverMessage() {
        return serverMessage;
    }

    /**
     * Translates a failed gRPC call into the matching typed exception; the original is kept as the cause. This does
     * not know what the call asked about, so a {@code NOT_FOUND} is a plain {@link NotFoundException}; the SDK's
     * clients, and {@link ServerCall}, report the subclass of the missing thing.
     *
     * @param e the exception thrown by a gRPC stub or delivered to a stream observer
     * @return the typed exception, never {@code null}
     */
    public static ChalkComputeException from(StatusRuntimeException e) {
        return from(e.getStatus(), e);
    }

    /**
     * Translates any exception raised by a gRPC call: status exceptions by their status, anything
     * else by {@link Status#fromThrowable(Throwable)}. A {@code ChalkComputeException} is returned as is.
     *
     * @param t the exception
     * @return the typed exception, never {@code null}
     */
    public static ChalkComputeException from(Throwable t) {
        if (t instanceof ChalkComputeException e) {
            return e;
        }
        if (t instanceof StatusRuntimeException e) {
            return from(e);
        }
        if (t instanceof StatusException e) {
            return from(e.getStatus(), e);
        }
        return from(Status.fromThrowable(t), t);
    }

    /**
     * Translates a gRPC status into the matching typed exception.
     *
     * @param status the status of the failed call
     * @param cause  the underlying exception, or {@code null}
     * @return the typed exception, never {@code null}
     */
    public static ChalkComputeException from(Status status, Throwable cause) {
        String message = status.getDescription();
        if (message == null && status.getCause() != null) {
            message = status.getCause().toString();
        } else if (status.getCode() == Status.Code.UNAVAILABLE
                && "io exception".equals(message)
                && status.getCause() != null
                && status.getCause().getMessage() != null) {
            // a channel without ConnectionFailures: the transport's exception names the address at least
            message = message + ": " + status.getCause().getMessage();
        }
        return of(status.getCode(), message, cause == null ? status.getCause() : cause);
    }

    /**
     * Translates an error the server reported inside a stream, where the code is a gRPC status
     * code name such as {@code "NOT_FOUND"}. An unknown name maps to {@code UNKNOWN}.
     *
     * @param codeName the status code name
     * @param message  the server's message
     * @return the typed exception, never {@code null}
     */
    public static ChalkComputeException fromCodeName(String codeName, String message) {
        Status.Code code;
        try {
            code = Status.Code.valueOf(codeName == null ? "" : codeName.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            code = Status.Code.UNKNOWN;
            message = (codeName == null || codeName.isBlank() ? "" : codeName + ": ") + message;
        }
        return of(code, message, null);
    }

    /**
     * Creates the typed exception for a status code: the one mapping used for every call. {@code NOT_FOUND} gives a
     * plain {@link NotFoundException}, since the code alone does not say what is missing; {@link ServerCall} makes it
     * the subclass of the thing a call asked about.
     *
     * @param code          the gRPC status code
     * @param serverMessage the server's message
     * @param cause         the underlying exception, or {@code null}
     * @return the typed exception, never {@code null}
     */
    public static ChalkComputeException of(Status.Code code, String serverMessage, Throwable cause) {
        return switch (code) {
            case NOT_FOUND -> new NotFoundException(serverMessage, cause);
            case INVALID_ARGUMENT -> new InvalidRequestException(serverMessage, cause);
            case FAILED_PRECONDITION -> new FailedPreconditionException(serverMessage, cause);
            case UNAVAILABLE -> new ServerUnavailableException(serverMessage, cause);
            case UNAUTHENTICATED, PERMISSION_DENIED -> new AuthenticationException(code, serverMessage, cause);
            case DEADLINE_EXCEEDED -> new DeadlineExceededException(serverMessage, cause);
            default -> new ChalkComputeException(code, serverMessage, cause);
        };
    }

    private static String describe(Status.Code code, String serverMessage) {
        String name = code == null ? "UNKNOWN" : code.name();
        return serverMessage == null || serverMessage.isBlank() ? name : name + ": " + serverMessage;
    }
}
