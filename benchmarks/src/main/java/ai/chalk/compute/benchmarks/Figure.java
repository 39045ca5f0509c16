package ai.chalk.compute.benchmarks;

/**
 * One measured figure next to its baseline from the same run.
 *
 * @param name         what was measured, as the report prints it
 * @param unit         the unit of {@code ours} and {@code baseline} ("ms", "calls/s", "MB/s", "MB")
 * @param ours         our figure (a median for latencies)
 * @param p95          our 95th percentile where it has one, else {@code ours}
 * @param baselineName what the baseline ran
 * @param baseline     the baseline's figure, measured the same way in the same run
 */
public record Figure(String name, String unit, double ours, double p95, String baselineName, double baseline) {

    /** Ours over the baseline: for latencies and sizes lower is better, for rates higher is. */
    public double ratio() {
        return baseline == 0 ? Double.NaN : ours / baseline;
    }
}
