package ai.chalk.compute.tracing;

import com.google.protobuf.ByteString;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.GZIPInputStream;

/**
 * A minimal OTLP/HTTP trace receiver on a loopback port. It stands in for an OpenTelemetry collector,
 * which is not available on these machines: it accepts {@code POST /v1/traces} with a protobuf
 * {@code ExportTraceServiceRequest} (gzip or not), decodes it with the {@code opentelemetry-proto}
 * classes and keeps every span it received.
 */
public final class OtlpHttpReceiverForTests implements AutoCloseable {

    /** One received span, ids in lower-case hex as OpenTelemetry shows them; {@code parentSpanId} empty for a root. */
    public record ReceivedSpan(
            String traceId, String spanId, String parentSpanId, String name, Span.SpanKind kind, String serviceName) {}

    private final HttpServer server;
    private final List<ReceivedSpan> spans = new CopyOnWriteArrayList<>();
    private final List<String> errors = new CopyOnWriteArrayList<>();

    public OtlpHttpReceiverForTests() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/v1/traces", this::handle);
        server.start();
    }

    /** The URL to configure as the OTLP traces endpoint. */
    public String tracesEndpoint() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/traces";
    }

    public List<ReceivedSpan> spans() {
        return List.copyOf(spans);
    }

    /** Requests that could not be decoded. */
    public List<String> errors() {
        return List.copyOf(errors);
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            if (!"POST".equals(exchange.getRequestMethod())) {
                exchange.sendResponseHeaders(405, -1);
                return;
            }
            InputStream body = exchange.getRequestBody();
            if ("gzip".equalsIgnoreCase(exchange.getRequestHeaders().getFirst("Content-Encoding"))) {
                body = new GZIPInputStream(body);
            }
            ExportTraceServiceRequest request;
            try {
                request = ExportTraceServiceRequest.parseFrom(body);
            } catch (IOException e) {
                errors.add(e.toString());
                exchange.sendResponseHeaders(400, -1);
                return;
            }
            for (ResourceSpans resource : request.getResourceSpansList()) {
                String service = resource.getResource().getAttributesList().stream()
                        .filter(a -> a.getKey().equals("service.name"))
                        .map(a -> a.getValue().getStringValue())
                        .findFirst()
                        .orElse("");
                for (ScopeSpans scope : resource.getScopeSpansList()) {
                    for (Span span : scope.getSpansList()) {
                        spans.add(new ReceivedSpan(
                                hex(span.getTraceId()),
                                hex(span.getSpanId()),
                                hex(span.getParentSpanId()),
                                span.getName(),
                                span.getKind(),
                                service));
                    }
                }
            }
            byte[] response = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
            exchange.getResponseHeaders().add("Content-Type", "application/x-protobuf");
            exchange.sendResponseHeaders(200, response.length == 0 ? -1 : response.length);
            if (response.length > 0) {
                exchange.getResponseBody().write(response);
            }
        }
    }

    private static String hex(ByteString bytes) {
        return HexFormat.of().formatHex(bytes.toByteArray());
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
