package ai.chalk.compute.tracing;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Says once per outage that spans could not be exported, as the SDK does: a WARN when exports start failing, DEBUG for
 * each failure after it, INFO when they succeed again, per endpoint across every client of the process. A collector that is down must not flood the application's log.
 */
final class OutageWarningExporter implements SpanExporter {

    private static final Logger log = LoggerFactory.getLogger(OutageWarningExporter.class);

    private final SpanExporter delegate;
    private final String endpoint;
    /** Whether exports to an endpoint are failing, shared by every client of the process: one warning per outage. */
    private static final ConcurrentMap<String, AtomicBoolean> OUTAGES = new ConcurrentHashMap<>();

    private final AtomicBoolean down;

    OutageWarningExporter(SpanExporter delegate, String endpoint) {
        this.delegate = delegate;
        this.endpoint = endpoint;
        this.down = OUTAGES.computeIfAbsent(endpoint, e -> new AtomicBoolean());
    }

    @Override
    public CompletableResultCode export(Collection<SpanData> spans) {
        CompletableResultCode result = delegate.export(spans);
        result.whenComplete(() -> {
            if (result.isSuccess()) {
                if (down.compareAndSet(true, false)) {
                    log.info("Exporting Chalk Compute traces to {} works again", endpoint);
                }
            } else if (down.compareAndSet(false, true)) {
                log.warn(
                        "Could not export {} Chalk Compute span(s) to {}{}; further failures are logged at DEBUG until"
                                + " it works again",
                        spans.size(),
                        endpoint,
                        result.getFailureThrowable() == null
                                ? ""
                                : ": " + result.getFailureThrowable().getMessage());
            } else {
                log.debug("Could not export {} Chalk Compute span(s) to {}", spans.size(), endpoint);
            }
        });
        return result;
    }

    /** Whether the last export to this endpoint, by any client of the process, failed. */
    boolean endpointDown() {
        return down.get();
    }

    @Override
    public CompletableResultCode flush() {
        return delegate.flush();
    }

    @Override
    public CompletableResultCode shutdown() {
        return delegate.shutdown();
    }
}
