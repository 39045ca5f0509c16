package ai.chalk.compute.benchmarks;

import java.util.Arrays;

/** Percentiles of durations measured in nanoseconds, in milliseconds. */
public final class Samples {

    private Samples() {}

    /** The median of {@code nanos}, in milliseconds. */
    public static double medianMillis(long[] nanos) {
        return percentileMillis(nanos, 50);
    }

    /** The {@code percentile}th percentile (nearest rank) of {@code nanos}, in milliseconds. */
    public static double percentileMillis(long[] nanos, int percentile) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        int i = Math.min(s.length - 1, (int) Math.ceil(s.length * percentile / 100.0) - 1);
        return s[Math.max(0, i)] / 1e6;
    }
}
