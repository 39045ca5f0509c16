/**
 * Traces of a plain-Java client, as OpenTelemetry's {@code OTEL_*} environment variables ask: a client span per call to
 * the server, exported over OTLP, its context sent along in {@code traceparent}; nothing at all when they ask for none.
 */
@NullMarked
package ai.chalk.compute.tracing;

import org.jspecify.annotations.NullMarked;
