package ai.chalk.compute.server.grpc;

import ai.chalk.compute.server.auth.BearerTokens;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.threads.EnvironmentShares;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

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
 * is full. They are counted apart, per caller (its environment when it proves one with a token, else its address, an IPv6
 * one by its /64: {@link PeerAddress}), from their start to their end: anyone who reaches the port could otherwise keep
 * health watches (or checks never half-closed) open by the hundred thousand on one connection, about 5 KB of heap each
 * (20,000 watches opened in 10 s here), until the server ran out of memory. Health calls and token exchanges have
 * pools of their own, so that a flood of either cannot keep clients from the other: {@value #OPEN_CALL_LIMIT} each
 * under way, {@value #OPEN_CALLS_PER_CALLER} of one caller, and past that a call is refused RESOURCE_EXHAUSTED.
 */
public final class CallsInFlight implements ServerInterceptor {

    /** The default limit: about 200 MB of thread stacks when every call holds a thread. */
    public static final int DEFAULT_LIMIT = 2048;

    /**
     * The most health checks and watches, and apart the most token exchanges, under way at once, server-wide: a bound
     * on their heap (about 80 MB each) that takes 256 hosts at their share to reach, so that a few cannot make every
     * other caller's health checks fail (an orchestrator would restart the server) or keep clients from tokens.
     */
    public static final int OPEN_CALL_LIMIT = 16_384;

    /** The most of either one caller has under way: an honest one makes a few (the SDK exchanges one token at a time). */
    public static final int OPEN_CALLS_PER_CALLER = 64;

    private static final String TOKEN_EXCHANGE = "chalk.server.v1.AuthService/GetToken";

    private final EnvironmentShares places;
    private final EnvironmentShares healthCalls =
            new EnvironmentShares("health checks and watches", OPEN_CALL_LIMIT, OPEN_CALLS_PER_CALLER);
    private final EnvironmentShares tokenExchanges =
            new EnvironmentShares("token exchanges", OPEN_CALL_LIMIT, OPEN_CALLS_PER_CALLER);

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
            boolean token = call.getMethodDescriptor().getFullMethodName().equals(TOKEN_EXCHANGE);
            // an environment the caller proved (a token) is its own; one it merely names (--auth none) is anyone's
            boolean proved =
                    caller != null && (caller.kind() == Caller.Kind.CLIENT || caller.kind() == Caller.Kind.WORKLOAD);
            String key = proved
                    ? "environment " + caller.environment()
                    : "address " + PeerAddress.ofCall(call.getAttributes());
            return counted(
                    call,
                    headers,
                    next,
                    token ? tokenExchanges : healthCalls,
                    key,
                    token ? CallsInFlight::tokenRefusal : CallsInFlight::healthRefusal);
        }
        return counted(call, headers, next, places, caller.environment(), CallsInFlight::refusalMessage);
    }

    /** Starts {@code call} with a place of {@code key}'s in {@code counts}, given back when it ends; or refuses it. */
    private static <Q, R> ServerCall.Listener<Q> counted(
            ServerCall<Q, R> call,
            Metadata headers,
            ServerCallHandler<Q, R> next,
            EnvironmentShares counts,
            String key,
            EnvironmentShares.Refusals refusals) {
        EnvironmentShares.Place place;
        try {
            place = counts.take(key, refusals);
        } catch (ComputeException e) {
            call.close(StatusErrors.toStatus(e), new Metadata());
            return new ServerCall.Listener<>() {};
        }
        ServerCall<Q, R> counted = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void close(Status status, Metadata trailers) {
                // the place is given back before the status is sent: a client that makes its next call as soon as
                // this one answers must find it free, not race this thread's return from close
                place.close();
                super.close(status, trailers);
            }
        };
        ServerCall.Listener<Q> listener;
        try {
            listener = next.startCall(counted, headers);
        } catch (RuntimeException | Error e) {
            place.close();
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
                    place.close();
                }
            }

            @Override
            public void onComplete() {
                try {
                    super.onComplete();
                } finally {
                    place.close();
                }
            }
        };
    }

    /** Calls under way now, server-wide. */
    public int inFlight() {
        return places.held();
    }

    /** Health checks and watches under way now, server-wide. */
    public int healthCalls() {
        return healthCalls.held();
    }

    private static String refusalMessage(
            EnvironmentShares.Refusal refusal, EnvironmentShares counts, String environment) {
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? "this environment has " + counts.held(environment) + " calls under way, the most one environment"
                        + " may (half of the " + counts.limit() + " the server takes; each may hold a server thread):"
                        + " wait for some to finish"
                : "the server has " + counts.held() + " calls under way, its limit: try again once some have finished";
    }

    private static String healthRefusal(EnvironmentShares.Refusal refusal, EnvironmentShares counts, String caller) {
        return openRefusal(refusal, counts, caller, "health checks and watches")
                + ": close some watches, or wait for checks to end";
    }

    private static String tokenRefusal(EnvironmentShares.Refusal refusal, EnvironmentShares counts, String caller) {
        return openRefusal(refusal, counts, caller, "token exchanges") + ": wait for them to end";
    }

    private static String openRefusal(
            EnvironmentShares.Refusal refusal, EnvironmentShares counts, String caller, String what) {
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? caller + " has " + counts.held(caller) + " " + what + " under way, the most one caller may (the"
                        + " server takes " + counts.limit() + " from all)"
                : "the server has " + counts.held() + " " + what + " under way, its limit";
    }
}
