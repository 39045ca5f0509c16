package ai.chalk.compute.server.grpc;

import ai.chalk.compute.server.auth.BearerTokens;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.threads.EnvironmentShares;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * How many unary and server-streaming calls are under way at once, server-wide and per environment. Such a call may
 * hold a server thread for as long as it lasts (a function call waiting for a replica with room, a create waiting for
 * its image, a build's log followed by a client that does not read, a SQL query), and gRPC gives each one a thread of
 * an unbounded pool: a tenant making thousands of them at once made the server start thousands of threads. One
 * environment has at most half of the limit under way, so a tenant at its share holds back only its own calls; past
 * it, a call is answered RESOURCE_EXHAUSTED at once. Calls that stream from the client (exec, sessions, uploads) are
 * bounded where they hold threads ({@code exec.RunningCommands}, the received-message budgets).
 *
 * <p>Installed after the interceptor that says who calls ({@link Caller}); the calls open to callers without
 * credentials (health checks, the token exchange: {@link BearerTokens#open}) hold no thread while they wait, and are
 * not counted with any environment's, so that they can neither fill an environment's share nor be refused because one
 * is full. They are counted apart, per peer address, from their start to their end: anyone who reaches the port could
 * otherwise keep health watches (or checks never half-closed) open by the hundred thousand on one connection, about
 * 5 KB of heap each (20,000 watches opened in 10 s here), until the server ran out of memory. One address (an IPv6
 * one by its /64, which one host is given whole) has at most half of {@link #OPEN_CALL_LIMIT} open, and past that a
 * call without credentials is refused RESOURCE_EXHAUSTED.
 */
public final class CallsInFlight implements ServerInterceptor {

    /** The default limit: about 200 MB of thread stacks when every call holds a thread. */
    public static final int DEFAULT_LIMIT = 2048;

    /**
     * The most calls open to callers without credentials (health checks and watches, token exchanges) under way at
     * once, server-wide: about 5 MB of heap.
     */
    public static final int OPEN_CALL_LIMIT = 1024;

    private final EnvironmentShares places;
    /** Calls of the open methods, kept per peer address rather than per environment: their callers may have none. */
    private final EnvironmentShares openCalls = new EnvironmentShares("calls without credentials", OPEN_CALL_LIMIT);

    /** @param limit the most calls under way at once, server-wide (at least 2: one environment has half) */
    public CallsInFlight(int limit) {
        this.places = new EnvironmentShares("calls under way", limit);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        MethodDescriptor.MethodType type = call.getMethodDescriptor().getType();
        if (type == MethodDescriptor.MethodType.BIDI_STREAMING
                || type == MethodDescriptor.MethodType.CLIENT_STREAMING) {
            return next.startCall(call, headers);
        }
        Caller caller = Caller.KEY.get();
        if (caller == null || BearerTokens.open(call.getMethodDescriptor().getFullMethodName())) {
            // health and the token exchange, open to anyone: counted with no environment's calls, so that no one can
            // hold back an environment's calls with health watches, nor keep clients from getting tokens; they wait
            // on timers and callbacks, not threads, but each holds heap for as long as it is open
            return counted(call, headers, next, openCalls, peer(call), CallsInFlight::openCallRefusal);
        }
        return counted(call, headers, next, places, caller.environment(), CallsInFlight::refusalMessage);
    }

    /** Refusals' messages, from the counts that refused. */
    private interface Refusals {
        String message(EnvironmentShares.Refusal refusal, EnvironmentShares counts, String key);
    }

    /** Starts {@code call} with a place of {@code key}'s in {@code counts}, given back when it ends; or refuses it. */
    private static <Q, R> ServerCall.Listener<Q> counted(
            ServerCall<Q, R> call,
            Metadata headers,
            ServerCallHandler<Q, R> next,
            EnvironmentShares counts,
            String key,
            Refusals refusals) {
        EnvironmentShares.Refusal refusal = counts.tryTake(key);
        if (refusal != null) {
            call.close(
                    Status.RESOURCE_EXHAUSTED.withDescription(refusals.message(refusal, counts, key)), new Metadata());
            return new ServerCall.Listener<>() {};
        }
        AtomicBoolean given = new AtomicBoolean();
        Runnable giveBack = () -> {
            if (given.compareAndSet(false, true)) {
                counts.give(key);
            }
        };
        ServerCall<Q, R> counted = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void close(Status status, Metadata trailers) {
                // the place is given back before the status is sent: a client that makes its next call as soon as
                // this one answers must find it free, not race this thread's return from close
                giveBack.run();
                super.close(status, trailers);
            }
        };
        ServerCall.Listener<Q> listener;
        try {
            listener = next.startCall(counted, headers);
        } catch (RuntimeException | Error e) {
            giveBack.run();
            throw e;
        }
        // a call the client cancelled is over once its handler has returned: listener callbacks run one at a time, so
        // onCancel comes after a handler still waiting, whose thread is held until then
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
            @Override
            public void onCancel() {
                try {
                    super.onCancel();
                } finally {
                    giveBack.run();
                }
            }

            @Override
            public void onComplete() {
                try {
                    super.onComplete();
                } finally {
                    giveBack.run();
                }
            }
        };
    }

    /** Calls under way now, server-wide. */
    public int inFlight() {
        return places.held();
    }

    /** Calls of the methods open to callers without credentials under way now, server-wide. */
    public int openCalls() {
        return openCalls.held();
    }

    /**
     * The caller's address without its port, an IPv6 one by its /64: one host keeps its share whatever ports and
     * addresses of its own it connects from.
     */
    private static String peer(ServerCall<?, ?> call) {
        SocketAddress address = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
        if (!(address instanceof InetSocketAddress inet) || inet.getAddress() == null) {
            return String.valueOf(address);
        }
        InetAddress host = inet.getAddress();
        if (host instanceof Inet6Address && !host.isLoopbackAddress()) {
            byte[] network = Arrays.copyOf(host.getAddress(), 16);
            Arrays.fill(network, 8, 16, (byte) 0);
            try {
                return InetAddress.getByAddress(network).getHostAddress() + "/64";
            } catch (UnknownHostException e) {
                throw new IllegalStateException("16 bytes are an IPv6 address", e);
            }
        }
        return host.getHostAddress();
    }

    private static String refusalMessage(
            EnvironmentShares.Refusal refusal, EnvironmentShares counts, String environment) {
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? "this environment has " + counts.held(environment) + " calls under way, the most one environment"
                        + " may (half of the " + counts.limit() + " the server takes; each may hold a server thread):"
                        + " wait for some to finish"
                : "the server has " + counts.held() + " calls under way, its limit: try again once some have finished";
    }

    private static String openCallRefusal(EnvironmentShares.Refusal refusal, EnvironmentShares counts, String peer) {
        return (refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                        ? peer + " has " + counts.held(peer) + " calls without credentials under way (health checks"
                                + " and watches, token exchanges), the most one address may (half of the "
                                + counts.limit() + " the server takes)"
                        : "the server has " + counts.held() + " calls without credentials under way (health checks and"
                                + " watches, token exchanges), its limit")
                + ": close some health watches, or wait for checks to end";
    }
}
