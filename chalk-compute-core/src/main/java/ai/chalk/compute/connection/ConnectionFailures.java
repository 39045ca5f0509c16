package ai.chalk.compute.connection;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.io.FileNotFoundException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.channels.ClosedChannelException;
import java.util.Locale;
import java.util.Objects;
import javax.net.ssl.SSLException;

/**
 * Names the server and the cause in the status of a call that could not reach it: gRPC reports a refused
 * connection as {@code UNAVAILABLE: io exception}, which says neither what happened nor where. With this
 * interceptor on a channel the same failure reads {@code UNAVAILABLE: connection refused to localhost:50051}, and so
 * does every SDK exception, log line, progress line and health detail made from it.
 * <pre>{@code
 * Channel channel = ConnectionFailures.intercept(managedChannel, "compute.internal:50051");
 * }</pre>
 *
 * <p>Only failures of the connection are reworded: an {@code UNAVAILABLE} whose cause is the transport's (a refused
 * connection, an unknown host, a missing socket file, a TLS handshake, a timeout), or an {@code UNAVAILABLE} or
 * deadline the client reported while still waiting for a connection. A status the server sent keeps its message, with
 * the target added when it is {@code UNAVAILABLE}. A message that names the target already is left as it is, so the
 * interceptor may be applied more than once. The SDK's clients apply it to every channel they open or are given.
 */
public final class ConnectionFailures implements ClientInterceptor {

    private final String target;

    /**
     * @param target the address calls go to, as the user wrote it ({@code localhost:50051}, {@code unix:///run/s.sock})
     */
    public ConnectionFailures(String target) {
        this.target = Objects.requireNonNull(target, "target");
    }

    /**
     * A channel whose failed calls name {@code target}.
     *
     * @param channel the channel
     * @param target  the address it leads to
     * @return the channel with this interceptor in front
     */
    public static Channel intercept(Channel channel, String target) {
        return ClientInterceptors.intercept(channel, new ConnectionFailures(target));
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
            @Override
            public void start(Listener<R> listener, Metadata headers) {
                super.start(
                        new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
                            @Override
                            public void onClose(Status status, Metadata trailers) {
                                super.onClose(describe(status, target), trailers);
                            }
                        },
                        headers);
            }
        };
    }

    /**
     * The status with a message that names the target and the cause when the call did not reach the server; any
     * other status unchanged.
     *
     * @param status the status a call ended with
     * @param target the address the call went to
     * @return the status to report, with the same code and cause
     */
    public static Status describe(Status status, String target) {
        String description = status.getDescription() == null ? "" : status.getDescription();
        if (status.isOk() || description.contains(target)) {
            return status;
        }
        if (status.getCode() == Status.Code.DEADLINE_EXCEEDED) {
            // the client's own text lists the call's state; waiting_for_connection means no connection was made
            return description.contains("waiting_for_connection")
                    ? status.withDescription(
                            "no connection to " + target + " before the deadline (" + description + ")")
                    : status;
        }
        if (status.getCode() != Status.Code.UNAVAILABLE) {
            return status;
        }
        if (status.getCause() == null || describedElsewhere(status.getCause())) {
            // the server's words (shutting down), the channel's (no in-process server of that name), or a failure
            // another call reported, perhaps about another server (a token fetched elsewhere)
            return status.withDescription(
                    description.isEmpty() ? "cannot reach " + target : description + " (at " + target + ")");
        }
        String transport = transportFailure(status.getCause(), target);
        return status.withDescription(
                transport != null ? transport : "connection to " + target + " failed: " + innermost(status.getCause()));
    }

    private static boolean describedElsewhere(Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof StatusRuntimeException
                    || t instanceof StatusException
                    || t instanceof ChalkComputeException) {
                return true;
            }
        }
        return false;
    }

    /** The innermost cause's message, or its class when it has none. */
    private static String innermost(Throwable cause) {
        Throwable t = cause;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.getMessage() != null && !t.getMessage().isBlank()
                ? t.getMessage()
                : t.getClass().getSimpleName();
    }

    /** The sentence for a failure of the transport, found in the cause chain; {@code null} when it holds none. */
    private static String transportFailure(Throwable cause, String target) {
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof UnknownHostException) {
                return "unknown host in " + target + " (" + t.getMessage() + ")";
            }
            if (t instanceof NoRouteToHostException) {
                return "no route to host " + target;
            }
            if (t instanceof FileNotFoundException) {
                return "no socket file at " + target;
            }
            if (t instanceof SocketTimeoutException
                    || t.getClass().getSimpleName().contains("ConnectTimeout")) {
                return "connection to " + target + " timed out";
            }
            if (t instanceof SSLException) {
                return "TLS handshake with " + target + " failed: " + t.getMessage();
            }
            if (t instanceof ConnectException) {
                String message = String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT);
                if (message.contains("refused")) {
                    return "connection refused to " + target;
                }
                if (message.contains("no such file")) {
                    return "no socket file at " + target;
                }
                if (message.contains("permission denied")) {
                    return "permission denied connecting to " + target;
                }
                if (!(t.getCause() instanceof ConnectException)) {
                    return "cannot connect to " + target + ": " + t.getMessage();
                }
            }
            if (t instanceof ClosedChannelException) {
                return "connection to " + target + " closed";
            }
        }
        return null;
    }

    @Override
    public String toString() {
        return "ConnectionFailures[" + target + "]";
    }
}
