package ai.chalk.compute.tracing;

import io.grpc.Channel;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The traces of one client's calls: a span per call when {@link OtelEnvironment} asks for export and OpenTelemetry's
 * OTLP exporter ({@code io.opentelemetry:opentelemetry-exporter-otlp}) is on the class path; nothing otherwise. A
 * client closes its tracing when it closes, which exports what is left.
 */
public abstract class ClientTracing implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ClientTracing.class);

    /** No tracing: calls go as they are. */
    public static final ClientTracing NONE = new ClientTracing() {
        @Override
        public Channel intercept(Channel channel) {
            return channel;
        }

        @Override
        public void close() {}

        @Override
        public String toString() {
            return "ClientTracing[none]";
        }
    };

    ClientTracing() {}

    /**
     * The tracing the environment's {@code OTEL_*} variables ask for.
     *
     * @param env environment variables
     * @return the tracing; {@link #NONE} when no OTLP endpoint is set, export is turned off, or the exporter is not on
     *     the class path (said once in a warning)
     * @throws IllegalArgumentException when a variable cannot be read, naming it
     */
    public static ClientTracing fromEnv(Map<String, String> env) {
        OtelEnvironment otel = OtelEnvironment.fromEnv(env);
        if (!otel.exports()) {
            return NONE;
        }
        if (!exporterPresent()) {
            log.warn(
                    "OTEL_EXPORTER_OTLP_*ENDPOINT is set, but io.opentelemetry:opentelemetry-exporter-otlp is not on the"
                            + " class path: Chalk Compute calls are not traced. Add it to trace them to {}",
                    otel.tracesEndpoint().orElseThrow());
            return NONE;
        }
        return new OtlpClientTracing(otel);
    }

    private static boolean exporterPresent() {
        try {
            Class.forName(
                    "io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter",
                    false,
                    ClientTracing.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /**
     * The channel with a client span around each call, its context sent in {@code traceparent}.
     *
     * @param channel the channel calls go over
     * @return the traced channel
     */
    public abstract Channel intercept(Channel channel);

    /**
     * Exports the spans not yet exported and stops exporting: waiting up to 10 seconds, or 1 second when the last
     * export of the process to the same collector failed.
     */
    @Override
    public abstract void close();
}
