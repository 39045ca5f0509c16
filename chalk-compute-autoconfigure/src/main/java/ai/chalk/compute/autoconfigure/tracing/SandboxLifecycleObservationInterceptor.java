package ai.chalk.compute.autoconfigure.tracing;

import ai.chalk.compute.autoconfigure.ChalkComputeChannelInterceptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.Map;
import java.util.Objects;
import org.springframework.core.Ordered;

/**
 * Observes the steps of a sandbox's life as the application's client takes them: {@code create},
 * {@code exec} and {@code terminate}. Each is an observation named {@value #OBSERVATION_NAME} (a
 * timer, and with tracing a span named {@code sandbox create}, ...) with the low-cardinality keys
 * {@code chalk.compute.step} and {@code chalk.compute.outcome} (the gRPC status code) and the
 * high-cardinality key {@code chalk.compute.sandbox.id}. It wraps the gRPC call, so the call's own
 * client span, and the server's span behind it, are its children.
 */
public final class SandboxLifecycleObservationInterceptor implements ChalkComputeChannelInterceptor {

    /** The observation's name. */
    public static final String OBSERVATION_NAME = "chalk.compute.sandbox";
    /** The step: {@code create}, {@code exec} or {@code terminate}. */
    public static final String STEP = "chalk.compute.step";
    /** How the call ended: a gRPC status code such as {@code OK}. */
    public static final String OUTCOME = "chalk.compute.outcome";
    /** The sandbox's id, once known. */
    public static final String SANDBOX_ID = "chalk.compute.sandbox.id";
    /** Runs before every other Chalk Compute interceptor, so their work is inside the step. */
    public static final int ORDER = Ordered.HIGHEST_PRECEDENCE + 100;

    private static final Map<String, String> STEPS = Map.of(
            "chalk.sandbox.v1.SandboxService/CreateSandbox", "create",
            "chalk.sandbox.v1.SandboxService/Exec", "exec",
            "chalk.sandbox.v1.SandboxService/TerminateSandbox", "terminate",
            "chalk.sandbox.v2.SandboxProcessService/ExecCommand", "exec",
            "chalk.sandbox.v2.SandboxProcessService/OpenSession", "exec");

    private final ObservationRegistry registry;

    /**
     * @param registry where observations go
     */
    public SandboxLifecycleObservationInterceptor(ObservationRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        String step = STEPS.get(method.getFullMethodName());
        if (step == null) {
            return next.newCall(method, options);
        }
        Observation observation = Observation.createNotStarted(OBSERVATION_NAME, registry)
                .contextualName("sandbox " + step)
                .lowCardinalityKeyValue(STEP, step)
                .start();
        if (observation.isNoop()) {
            return next.newCall(method, options);
        }
        ClientCall<Q, R> call;
        try (Observation.Scope scope = observation.openScope()) {
            call = next.newCall(method, options);
        } catch (RuntimeException e) {
            observation.error(e).stop();
            throw e;
        }
        return new ObservedCall<>(call, observation);
    }

    /** A call whose observation ends when the call closes. */
    private static final class ObservedCall<Q, R> extends ForwardingClientCall.SimpleForwardingClientCall<Q, R> {

        private final Observation observation;
        private volatile boolean sandboxIdKnown;

        ObservedCall(ClientCall<Q, R> delegate, Observation observation) {
            super(delegate);
            this.observation = observation;
        }

        @Override
        public void start(Listener<R> listener, Metadata headers) {
            try (Observation.Scope scope = observation.openScope()) {
                super.start(
                        new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
                            @Override
                            public void onMessage(R message) {
                                noteSandboxId(message);
                                super.onMessage(message);
                            }

                            @Override
                            public void onClose(Status status, Metadata trailers) {
                                observation.lowCardinalityKeyValue(
                                        OUTCOME, status.getCode().name());
                                if (!status.isOk()) {
                                    observation.error(status.asRuntimeException());
                                }
                                observation.stop();
                                super.onClose(status, trailers);
                            }
                        },
                        headers);
            } catch (RuntimeException e) {
                observation.error(e).stop();
                throw e;
            }
        }

        @Override
        public void sendMessage(Q message) {
            noteSandboxId(message);
            try (Observation.Scope scope = observation.openScope()) {
                super.sendMessage(message);
            }
        }

        @Override
        public void halfClose() {
            try (Observation.Scope scope = observation.openScope()) {
                super.halfClose();
            }
        }

        private void noteSandboxId(Object message) {
            if (sandboxIdKnown || !(message instanceof Message proto)) {
                return;
            }
            String id = sandboxId(proto, 0);
            if (id != null) {
                sandboxIdKnown = true;
                observation.highCardinalityKeyValue(SANDBOX_ID, id);
            }
        }

        /** A {@code sandbox_id} field, or the {@code id} of a {@code sandbox} field, up to two levels down. */
        private static String sandboxId(Message message, int depth) {
            for (Map.Entry<FieldDescriptor, Object> field :
                    message.getAllFields().entrySet()) {
                FieldDescriptor descriptor = field.getKey();
                Object value = field.getValue();
                if (descriptor.getName().equals("sandbox_id") && value instanceof String s && !s.isEmpty()) {
                    return s;
                }
                if (descriptor.getName().equals("sandbox") && value instanceof Message sandbox) {
                    FieldDescriptor id = sandbox.getDescriptorForType().findFieldByName("id");
                    if (id != null && sandbox.getField(id) instanceof String s && !s.isEmpty()) {
                        return s;
                    }
                }
                if (depth < 1 && value instanceof Message nested) {
                    String found = sandboxId(nested, depth + 1);
                    if (found != null) {
                        return found;
                    }
                }
            }
            return null;
        }
    }
}
