package ai.chalk.compute.tracing;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * What OpenTelemetry's standard environment variables ask of a plain-Java client's traces. Export is on when an OTLP
 * endpoint is named ({@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} or {@code OTEL_EXPORTER_OTLP_ENDPOINT}) and neither
 * {@code OTEL_SDK_DISABLED=true} nor {@code OTEL_TRACES_EXPORTER=none} turns it off. Also read:
 * {@code OTEL_EXPORTER_OTLP_TRACES_PROTOCOL} / {@code OTEL_EXPORTER_OTLP_PROTOCOL} ({@code grpc}, the Java default, or
 * {@code http/protobuf}), {@code OTEL_EXPORTER_OTLP_TRACES_HEADERS} / {@code OTEL_EXPORTER_OTLP_HEADERS}
 * ({@code key=value,...}), {@code OTEL_SERVICE_NAME} and {@code OTEL_RESOURCE_ATTRIBUTES}. The signal-specific
 * variable wins over the general one, as the OpenTelemetry specification says.
 *
 * @param tracesEndpoint     where spans go: the traces endpoint as given, or the general endpoint with
 *                           {@code /v1/traces} appended for {@code http/protobuf}; empty when export is off
 * @param protocol           how they go
 * @param headers            headers sent with every export (such as an API key)
 * @param serviceName        the {@code service.name} resource attribute
 * @param resourceAttributes further resource attributes
 */
public record OtelEnvironment(
        Optional<String> tracesEndpoint,
        Protocol protocol,
        Map<String, String> headers,
        String serviceName,
        Map<String, String> resourceAttributes) {

    /** An OTLP transport. */
    public enum Protocol {
        /** OTLP over gRPC. */
        GRPC,
        /** OTLP over HTTP with protobuf bodies. */
        HTTP_PROTOBUF
    }

    /** Copies the maps. */
    public OtelEnvironment {
        headers = Map.copyOf(headers);
        resourceAttributes = Map.copyOf(resourceAttributes);
    }

    /**
     * Reads the variables.
     *
     * @param env environment variables, such as {@code System.getenv()}
     * @return what they ask
     * @throws IllegalArgumentException when a protocol is not {@code grpc} or {@code http/protobuf}, naming the variable
     */
    public static OtelEnvironment fromEnv(Map<String, String> env) {
        Protocol protocol = protocol(env);
        String serviceName = orElse(set(env, "OTEL_SERVICE_NAME"), "unknown_service:java");
        Map<String, String> attributes = pairs(env, "OTEL_RESOURCE_ATTRIBUTES");
        Map<String, String> headers = new LinkedHashMap<>(pairs(env, "OTEL_EXPORTER_OTLP_HEADERS"));
        headers.putAll(pairs(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"));
        boolean off = "true".equalsIgnoreCase(set(env, "OTEL_SDK_DISABLED"))
                || "none".equalsIgnoreCase(set(env, "OTEL_TRACES_EXPORTER"));
        String endpoint = set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        if (endpoint == null) {
            String general = set(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
            if (general != null) {
                endpoint = protocol == Protocol.HTTP_PROTOBUF
                        ? general.replaceAll("/+$", "") + "/v1/traces" // the spec's per-signal path
                        : general;
            }
        }
        return new OtelEnvironment(
                off ? Optional.empty() : Optional.ofNullable(endpoint), protocol, headers, serviceName, attributes);
    }

    /** Whether spans are to be exported. */
    public boolean exports() {
        return tracesEndpoint.isPresent();
    }

    /** Without the headers' values: they often hold an API key. */
    @Override
    public String toString() {
        return "OtelEnvironment[tracesEndpoint=" + tracesEndpoint.orElse("(off)") + ", protocol=" + protocol
                + ", headers=" + headers.keySet() + ", serviceName=" + serviceName + ", resourceAttributes="
                + resourceAttributes + "]";
    }

    private static Protocol protocol(Map<String, String> env) {
        String name = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
        String value = set(env, name);
        if (value == null) {
            name = "OTEL_EXPORTER_OTLP_PROTOCOL";
            value = set(env, name);
        }
        if (value == null) {
            return Protocol.GRPC;
        }
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "grpc" -> Protocol.GRPC;
            case "http/protobuf" -> Protocol.HTTP_PROTOBUF;
            default ->
                throw new IllegalArgumentException(
                        name + " must be grpc or http/protobuf (http/json is not supported), got \"" + value + "\"");
        };
    }

    /** {@code k1=v1,k2=v2}, values percent-decoded as the specification says; a pair without {@code =} is refused. */
    private static Map<String, String> pairs(Map<String, String> env, String name) {
        String value = set(env, name);
        Map<String, String> pairs = new LinkedHashMap<>();
        if (value == null) {
            return pairs;
        }
        for (String pair : value.split(",")) {
            if (pair.isBlank()) {
                continue;
            }
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException(
                        name + " must be key=value pairs separated by commas, got \"" + pair.strip() + "\"");
            }
            pairs.put(
                    pair.substring(0, eq).strip(),
                    java.net.URLDecoder.decode(
                            pair.substring(eq + 1).strip(), java.nio.charset.StandardCharsets.UTF_8));
        }
        return pairs;
    }

    private static @Nullable String set(Map<String, String> env, String name) {
        String value = env.get(name);
        return value == null || value.isBlank() ? null : value.strip();
    }

    private static String orElse(@Nullable String value, String fallback) {
        return value == null ? fallback : value;
    }
}
