package ai.chalk.compute.function.worker;

import ai.chalk.compute.error.RemoteExecutionError;
import ai.chalk.compute.proto.common.v1.ChalkError;
import ai.chalk.compute.proto.common.v1.ChalkException;
import ai.chalk.compute.proto.common.v1.ErrorCode;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * A function's own exception as the worker reports it: status {@code UNKNOWN} with the exception's message, and
 * trailer {@code chalk-error-bin} holding a {@code ChalkError} whose stack trace keeps the user's frames only.
 */
final class UserFailure {

    private UserFailure() {
    }

    /** The status exception ending the call. */
    static StatusRuntimeException toStatus(Throwable thrown) {
        Metadata trailers = new Metadata();
        trailers.put(RemoteExecutionError.ERROR_TRAILER, chalkError(thrown));
        String message = thrown.getMessage() == null ? thrown.getClass().getName() : thrown.getMessage();
        return Status.UNKNOWN.withDescription(message).asRuntimeException(trailers);
    }

    /** The ChalkError for a user exception. */
    static ChalkError chalkError(Throwable thrown) {
        String message = thrown.getMessage() == null ? "" : thrown.getMessage();
        return ChalkError.newBuilder()
                .setCode(ErrorCode.ERROR_CODE_RESOLVER_FAILED)
                .setMessage(thrown.getClass().getName() + (message.isEmpty() ? "" : ": " + message))
                .setException(ChalkException.newBuilder()
                        .setKind(thrown.getClass().getName())
                        .setMessage(message)
                        .setStacktrace(userTrace(thrown))
                        .setInternalStacktrace(fullTrace(thrown)))
                .build();
    }

    /** The exception and its causes, each with the frames above the worker's reflective call. */
    static String userTrace(Throwable thrown) {
        StringBuilder out = new StringBuilder();
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = thrown; t != null && seen.add(t); t = t.getCause()) {
            if (t != thrown) {
                out.append("Caused by: ");
            }
            out.append(t).append('\n');
            for (StackTraceElement frame : t.getStackTrace()) {
                if (isRuntimeFrame(frame)) {
                    break;
                }
                out.append("\tat ").append(frame).append('\n');
            }
        }
        return out.toString();
    }

    private static boolean isRuntimeFrame(StackTraceElement frame) {
        String type = frame.getClassName();
        return type.startsWith("jdk.internal.reflect.") || type.startsWith("java.lang.reflect.")
                || type.startsWith("ai.chalk.compute.function.") || type.startsWith("io.grpc.");
    }

    private static String fullTrace(Throwable thrown) {
        StringWriter out = new StringWriter();
        thrown.printStackTrace(new PrintWriter(out));
        return out.toString();
    }
}
