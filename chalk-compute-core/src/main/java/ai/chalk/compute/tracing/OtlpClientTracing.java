package ai.chalk.compute.tracing;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.exporter.otlp.trace.OtlpGrpcSpanExporter;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.concurrent.TimeUnit;

/**
 * Client spans exported over OTLP by an OpenTelemetry SDK of the client's own, never the application's global one
 * (which the application may configure as it likes). Loaded only when the exporter is on the class path.
 */
final class OtlpClientTracing extends ClientTracing {

    private final OtelEnvironment otel;
    private final SdkTracerProvider provider;
    private final GrpcClientSpans spans;
    private final OutageWarningExporter outages;

    OtlpClientTracing(OtelEnvironment otel) {
        this.otel = otel;
        String endpoint = otel.tracesEndpoint().orElseThrow();
        SpanExporter exporter;
        if (otel.protocol() == OtelEnvironment.Protocol.GRPC) {
            var builder = OtlpGrpcSpanExporter.builder().setEndpoint(endpoint);
            otel.headers().forEach(builder::addHeader);
            exporter = builder.build();
        } else {
            var builder = OtlpHttpSpanExporter.builder().setEndpoint(endpoint);
            otel.headers().forEach(builder::addHeader);
            exporter = builder.build();
        }
        this.outages = new OutageWarningExporter(exporter, endpoint);
        AttributesBuilder attributes = Attributes.builder();
        otel.resourceAttributes().forEach((k, v) -> attributes.put(AttributeKey.stringKey(k), v));
        attributes.put(AttributeKey.stringKey("service.name"), otel.serviceName());
        this.provider = SdkTracerProvider.builder()
                .setResource(Resource.getDefault().merge(Resource.create(attributes.build())))
                .addSpanProcessor(BatchSpanProcessor.builder(outages).build())
                .build();
        this.spans = new GrpcClientSpans(provider.get("ai.chalk.compute"));
    }

    @Override
    public Channel intercept(Channel channel) {
        return ClientInterceptors.intercept(channel, spans);
    }

    @Override
    public void close() {
        // the exporter retries a collector that is down for about 9 s: once one client of the process has found it
        // down, closing the others does not wait that out again
        provider.shutdown().join(outages.endpointDown() ? 1 : 10, TimeUnit.SECONDS);
    }

    @Override
    public String toString() {
        return "ClientTracing[" + otel + "]";
    }
}
