package ai.chalk.compute.server.runtime;

import java.util.Arrays;

/** Prints latencies as their 50th and 95th percentiles, and the median as a multiple of a baseline's. */
public final class LatencyReport {

    private final String format;
    private final double baseline;

    /**
     * A report against the median of {@code baselineNanos}, labels padded to {@code labelWidth} and milliseconds to
     * {@code numberWidth} characters.
     */
    public LatencyReport(long[] baselineNanos, int labelWidth, int numberWidth) {
        this.format = "  %-" + labelWidth + "s p50 %" + numberWidth + ".2f ms   p95 %" + numberWidth
                + ".2f ms   p50 = %4.2f x baseline%n";
        this.baseline = pct(baselineNanos, 50);
    }

    /** Prints one line for {@code what}. */
    public void line(String what, long[] nanos) {
        double p50 = pct(nanos, 50);
        double p95 = pct(nanos, 95);
        System.out.printf(format, what, p50, p95, p50 / baseline);
    }

    /** The {@code percentile}th percentile (nearest rank) of {@code nanos}, in milliseconds. */
    public static double pct(long[] nanos, int percentile) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        int index = Math.min(sorted.length - 1, (int) Math.ceil(percentile / 100.0 * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1e6;
    }
}
