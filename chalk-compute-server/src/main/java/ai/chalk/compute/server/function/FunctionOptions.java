package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.RetryPolicy;
import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.worker.CallPolicy;
import io.grpc.Status;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The protocol's {@code chalk_compute.*} options of a function version, checked.
 *
 * @param code      the code digest (the manifest's)
 * @param functions {@code name=Class#method} entries, in order
 * @param worker    {@code plain} or {@code spring:Main}
 * @param timeout   how long one call may take
 * @param calls     the config's concurrency and retry policies
 */
public record FunctionOptions(
        BlobDigest code, List<Entry> functions, String worker, Duration timeout, CallPolicy calls) {

    /** The call timeout when the version sets none. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);

    /** The option holding a call's timeout. */
    static final String TIMEOUT = "chalk_compute.timeout";

    /** The option holding the code's digest: the manifest blob's. */
    static final String CODE = "chalk_compute.code";

    /**
     * The most functions one deployment serves. A replica's untagged output line is kept for every function it serves,
     * and a deployment listing 15,000 names made each line 15,000 insertions of the server's CPU (and its logs'
     * places) for as many names.
     */
    public static final int MAX_FUNCTIONS = 256;

    private static final Pattern ENTRY = Pattern.compile("([A-Za-z_][A-Za-z0-9_.-]*)=([A-Za-z_$][\\w$.]*)#([\\w$]+)");

    /**
     * One function a deployment serves.
     *
     * @param name   the name calls use
     * @param target {@code fully.qualified.Class#method}
     */
    public record Entry(String name, String target) {}

    public FunctionOptions {
        functions = List.copyOf(functions);
    }

    /** The options of a version request's config; INVALID_ARGUMENT naming the option that is wrong. */
    public static FunctionOptions of(FunctionConfig config) {
        var o = config.getOptionsMap();
        String code = o.getOrDefault(CODE, "");
        if (code.isEmpty()) {
            throw invalid("config.options[\"chalk_compute.code\"] is required: the code digest (the manifest blob's"
                    + " sha256:...)");
        }
        BlobDigest digest = BlobDigest.parse("config.options[\"chalk_compute.code\"]", code);
        String list = o.getOrDefault("chalk_compute.functions", "");
        List<Entry> entries = new java.util.ArrayList<>();
        for (String e : list.split(",")) {
            var m = ENTRY.matcher(e.trim());
            if (!m.matches()) {
                throw invalid("config.options[\"chalk_compute.functions\"]: \"" + e.trim() + "\" is not"
                        + " name=fully.qualified.Class#method");
            }
            entries.add(new Entry(m.group(1), m.group(2) + "#" + m.group(3)));
        }
        String worker = o.getOrDefault("chalk_compute.worker", "plain");
        if (!worker.equals("plain") && !worker.matches("spring:[A-Za-z_$][\\w$.]*")) {
            throw invalid("config.options[\"chalk_compute.worker\"] is \"" + worker + "\"; expected plain or"
                    + " spring:fully.qualified.MainClass");
        }
        Duration timeout = DEFAULT_TIMEOUT;
        String t = o.get(TIMEOUT);
        if (t != null) {
            try {
                timeout = Duration.parse(t);
            } catch (DateTimeParseException e) {
                throw invalid("config.options[\"chalk_compute.timeout\"] is \"" + t + "\"; expected an ISO-8601"
                        + " duration such as PT30S");
            }
            if (timeout.isNegative() || timeout.isZero()) {
                throw invalid("config.options[\"chalk_compute.timeout\"] must be positive, got " + t);
            }
        }
        return new FunctionOptions(digest, entries, worker, timeout, callPolicy(config));
    }

    private static CallPolicy callPolicy(FunctionConfig config) {
        CallPolicy d = CallPolicy.DEFAULT;
        int maxConcurrent = config.hasConcurrency() ? config.getConcurrency().getMaxConcurrent() : 0;
        if (maxConcurrent < 0) {
            throw invalid("config.concurrency.max_concurrent must be 0 (no limit) or more, got " + maxConcurrent);
        }
        if (!config.hasRetryPolicy()) {
            return new CallPolicy(maxConcurrent, 0, d.initialBackoff(), d.backoffMultiplier(), d.maxBackoff());
        }
        RetryPolicy r = config.getRetryPolicy();
        if (r.getMaxRetries() < 0 || r.getMaxRetries() > 10) {
            throw invalid("config.retry_policy.max_retries must be between 0 and 10, got " + r.getMaxRetries());
        }
        if ((r.hasInitialBackoffMs() && r.getInitialBackoffMs() < 0)
                || (r.hasMaxBackoffMs() && r.getMaxBackoffMs() < 0)
                || (r.hasBackoffMultiplier() && !(r.getBackoffMultiplier() >= 1))) {
            throw invalid("config.retry_policy: backoffs must be 0 ms or more and backoff_multiplier at least 1");
        }
        return new CallPolicy(
                maxConcurrent,
                r.getMaxRetries(),
                r.hasInitialBackoffMs() ? Duration.ofMillis(r.getInitialBackoffMs()) : d.initialBackoff(),
                r.hasBackoffMultiplier() ? r.getBackoffMultiplier() : d.backoffMultiplier(),
                r.hasMaxBackoffMs() ? Duration.ofMillis(r.getMaxBackoffMs()) : d.maxBackoff());
    }

    /** The functions as the worker's {@code CHALK_WORKER_FUNCTIONS}. */
    public String functionsOption() {
        return String.join(
                ",", functions.stream().map(e -> e.name() + "=" + e.target()).toList());
    }

    /**
     * Refuses a new deployment that serves more than {@link #MAX_FUNCTIONS} functions (versions deployed before the
     * bound still run).
     */
    public FunctionOptions requireNew() {
        if (functions.size() > MAX_FUNCTIONS) {
            throw invalid("config.options[\"chalk_compute.functions\"] lists " + functions.size() + " functions; a"
                    + " deployment serves at most " + MAX_FUNCTIONS + ": split them over several deployments");
        }
        return this;
    }

    private static RuntimeException invalid(String message) {
        return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
    }
}
