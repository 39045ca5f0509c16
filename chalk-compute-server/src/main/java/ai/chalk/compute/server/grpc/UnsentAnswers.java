package ai.chalk.compute.server.grpc;

import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import com.google.protobuf.MessageLite;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The answers of unary calls that their clients have not read yet, per environment. gRPC sends an answer as fast as
 * the client reads it and keeps the rest in the server meanwhile, however large: a client that asked for 33 MiB
 * answers (function results, queued calls' results, SQL results, proxied AI answers) and never read them made the
 * server hold each one whole, without bound, until it ran out of memory. An answer's bytes are now held against a
 * budget from the moment it is sent until its call is over (read to its end, or cancelled), one environment holding at
 * most half; an answer that would pass it is not sent, and its call ends RESOURCE_EXHAUSTED saying why.
 *
 * <p>Installed after the interceptor that says who calls ({@link Caller}), on the TCP port and on the replicas'
 * socket: deployed code is a tenant's too. Streams that send many messages wait for their client to be ready before
 * each one ({@link ReadyGate}), so they hold a bounded amount and are not counted here.
 */
public final class UnsentAnswers implements ServerInterceptor {

    private final EnvironmentBytes budget;

    /** @param budget the bytes of answers sent and not yet read, of which one environment holds at most half */
    public UnsentAnswers(EnvironmentBytes budget) {
        this.budget = budget;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Caller caller = Caller.KEY.get();
        if (caller == null || call.getMethodDescriptor().getType() != MethodDescriptor.MethodType.UNARY) {
            return next.startCall(call, headers); // health and token exchanges answer a few bytes
        }
        Held held = new Held(budget.of(caller.environment()));
        ServerCall.Listener<Q> listener = next.startCall(new CountedCall<>(call, held), headers);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
            @Override
            public void onComplete() {
                held.release();
                super.onComplete();
            }

            @Override
            public void onCancel() {
                held.release();
                super.onCancel();
            }
        };
    }

    /** A call whose answer is held against the budget until the call is over, or refused past it. */
    private static final class CountedCall<Q, R> extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
        private final Held held;
        private boolean refused;

        CountedCall(ServerCall<Q, R> call, Held held) {
            super(call);
            this.held = held;
        }

        @Override
        public void sendMessage(R message) {
            long bytes = message instanceof MessageLite m ? m.getSerializedSize() : 0;
            EnvironmentBytes.Refusal refusal = held.keep(bytes);
            if (refusal != null) {
                refused = true;
                super.close(
                        Status.RESOURCE_EXHAUSTED.withDescription("the answer (" + bytes
                                + " bytes) is not sent: the answers this environment's clients have not read yet"
                                + " hold too many bytes: " + held.account.explain(refusal)
                                + "; read the answers of the calls you make (a call whose answer is not read holds"
                                + " it in the server until the call is cancelled)"),
                        new Metadata());
                return;
            }
            super.sendMessage(message);
        }

        @Override
        public void close(Status status, Metadata trailers) {
            if (!refused) { // else closed already, saying why the answer did not come
                super.close(status, trailers);
            }
        }
    }

    /** The bytes one call's answer holds: at most one answer's, given back once. */
    private static final class Held {
        private final EnvironmentBytes.Account account;
        private final AtomicLong bytes = new AtomicLong(); // -1 once the call is over

        Held(EnvironmentBytes.Account account) {
            this.account = account;
        }

        /** Reserves {@code n} bytes until the call is over; null when reserved (or the call is over), else why not. */
        EnvironmentBytes.@Nullable Refusal keep(long n) {
            EnvironmentBytes.Refusal refusal = account.tryReserve(n);
            if (refusal != null) {
                return refusal;
            }
            if (!bytes.compareAndSet(0, n)) {
                account.release(n); // over already, or a second answer (a unary call has one): nothing to hold
            }
            return null;
        }

        void release() {
            long n = bytes.getAndSet(-1);
            if (n > 0) {
                account.release(n);
            }
        }
    }
}
