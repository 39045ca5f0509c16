package ai.chalk.compute.tracing;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapSetter;

/**
 * A client span per gRPC call, named by the method ({@code chalk.sandbox.v1.SandboxService/CreateSandbox}) with the
 * semantic conventions' {@code rpc.*} attributes, a child of the caller's current span; its context goes to the server
 * in {@code traceparent}. A call that ends with a status other than OK marks its span as an error.
 */
final class GrpcClientSpans implements ClientInterceptor {

    private static final TextMapSetter<Metadata> HEADERS = (headers, key, value) -> {
        if (headers != null) {
            headers.put(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER), value);
        }
    };

    private final Tracer tracer;

    GrpcClientSpans(Tracer tracer) {
        this.tracer = tracer;
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        Span span = tracer.spanBuilder(method.getFullMethodName())
                .setSpanKind(SpanKind.CLIENT)
                .setAttribute("rpc.system", "grpc")
                .setAttribute("rpc.service", String.valueOf(method.getServiceName()))
                .setAttribute("rpc.method", String.valueOf(method.getBareMethodName()))
                .startSpan();
        Context context = Context.current().with(span);
        return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
            @Override
            public void start(Listener<R> listener, Metadata headers) {
                W3CTraceContextPropagator.getInstance().inject(context, headers, HEADERS);
                super.start(
                        new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
                            @Override
                            public void onClose(Status status, Metadata trailers) {
                                span.setAttribute(
                                        "rpc.grpc.status_code", status.getCode().value());
                                if (!status.isOk()) {
                                    span.setStatus(
                                            StatusCode.ERROR, status.getCode().name());
                                }
                                span.end();
                                super.onClose(status, trailers);
                            }
                        },
                        headers);
            }
        };
    }
}
