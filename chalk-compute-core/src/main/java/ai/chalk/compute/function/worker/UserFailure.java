package ai.chalk.compute.function.worker;

import ai.chalk.compute.error.RemoteExecutionException;
import ai.chalk.compute.proto.common.v1.ChalkError;
import ai.chalk.compute.proto.common.v1.ChalkException;
import ai.chalk.compute.proto.common.v1.ErrorCode;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * A function's own exception as the worker reports it: status {@code UNKNOWN} with the exception's message, and
 * trailer {@code chalk-error-bin} holding a {@code ChalkError} whose stack trace keeps the user's frames only.
 *
 * <p>Trailers travel in HTTP/2 headers, which gRPC clients accept up to 8 KiB by default (base64 makes a
 * {@code -bin} value a third larger), so the message and traces are cut to fit: a deep Spring or gRPC stack would
 * otherwise make every caller see a bare protocol error instead of the function's exception.
 */
final class UserFailure {

    /**
     * Bytes of text kept: the message (twice in the error, and percent-encoded in {@code grpc-message}, up to three
     * times its size), the user's trace, the internal trace. Together about 6.5 KiB on the wire at the most.
     */
    static final int MESSAGE_BYTES = 384;

    static final int USER_TRACE_BYTES = 1536;
    static final int INTERNAL_TRACE_BYTES = 1536;

    private UserFailure() {}

    /** The status exception ending the call. */
    static StatusRuntimeException toStatus(Throwable thrown) {
        Metadata trailers = new Metadata();
        trailers.put(RemoteExecutionException.ERROR_TRAILER, chalkError(thrown));
        String message = thrown.getMessage() == null ? thrown.getClass().getName() : thrown.getMessage();
        return Status.UNKNOWN.withDescription(cut(message, MESSAGE_BYTES)).asRuntimeException(trailers);
    }

    /** The ChalkError for a user exception. */
    static ChalkError chalkError(Throwable thrown) {
        String message = cut(thrown.getMessage() == null ? "" : thrown.getMessage(), MESSAGE_BYTES);
        return ChalkError.newBuilder()
                .setCode(ErrorCode.ERROR_CODE_RESOLVER_FAILED)
                .setMessage(thrown.getClass().getName() + (message.isEmpty() ? "" : ": " + message))
                .setException(ChalkException.newBuilder()
                        .setKind(thrown.getClass().getName())
                        .setMessage(message)
                        .setStacktrace(cut(userTrace(thrown), USER_TRACE_BYTES))
                        .setInternalStacktrace(cut(fullTrace(thrown), INTERNAL_TRACE_BYTES)))
                .build();
    }

    /** The text, or as many whole lines of it as fit in {@code max} UTF-8 bytes, and how many lines were left out. */
    static String cut(String text, int max) {
        if (text.getBytes(StandardCharsets.UTF_8).length <= max) {
            return text;
        }
        String[] lines = text.split("\n", -1);
        StringBuilder kept = new StringBuilder();
        int used = 0;
        int shown = 0;
        int budget = max - 40; // room for the marker
        for (String line : lines) {
            int size = line.getBytes(StandardCharsets.UTF_8).length + 1;
            if (used + size > budget) {
                break;
            }
            kept.append(line).append('\n');
            used += size;
            shown++;
        }
        if (shown == 0) { // one long line: keep its start
            String start = new String(text.getBytes(StandardCharsets.UTF_8), 0, budget, StandardCharsets.UTF_8);
            return start.substring(0, Math.max(0, start.length() - 1)) + "… (cut)";
        }
        return kept + "\t… " + (lines.length - shown) + " more lines\n";
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
        return type.startsWith("jdk.internal.reflect.")
                || type.startsWith("java.lang.reflect.")
                || type.startsWith("ai.chalk.compute.function.")
                || type.startsWith("io.grpc.");
    }

    private static String fullTrace(Throwable thrown) {
        StringWriter out = new StringWriter();
        thrown.printStackTrace(new PrintWriter(out));
        return out.toString();
    }
}
