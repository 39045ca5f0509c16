package ai.chalk.compute.server.grpc;

import ai.chalk.compute.server.auth.BearerTokens;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.threads.EnvironmentShares;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
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
 * not counted, so that they can neither fill an environment's share nor be refused because one is full.
 */
public final class CallsInFlight implements ServerInterceptor {

    /** The default limit: about 200 MB of thread stacks when every call holds a thread. */
    public static final int DEFAULT_LIMIT = 2048;

    private final EnvironmentShares places;

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
            // on timers and callbacks, not threads
            return next.startCall(call, headers);
        }
        String environment = caller.environment();
        EnvironmentShares.Refusal refusal = places.tryTake(environment);
        if (refusal != null) {
            call.close(Status.RESOURCE_EXHAUSTED.withDescription(refusalMessage(refusal, environment)), new Metadata());
            return new ServerCall.Listener<>() {};
        }
        AtomicBoolean given = new AtomicBoolean();
        Runnable giveBack = () -> {
            if (given.compareAndSet(false, true)) {
                places.give(environment);
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

    private String refusalMessage(EnvironmentShares.Refusal refusal, String environment) {
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? "this environment has " + places.held(environment) + " calls under way, the most one environment"
                        + " may (half of the " + places.limit() + " the server takes; each may hold a server thread):"
                        + " wait for some to finish"
                : "the server has " + places.held() + " calls under way, its limit: try again once some have finished";
    }
}
