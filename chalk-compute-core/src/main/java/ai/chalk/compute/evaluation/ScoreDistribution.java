package ai.chalk.compute.evaluation;

import ai.chalk.compute.proto.evaluation.v1.EvaluationValueDistribution;
import java.util.OptionalDouble;

/**
 * Percentiles of a run's scores (or of a metric) over its rows, interpolated between the closest ranks as NumPy
 * does by default; each is empty when there was nothing to rank.
 *
 * @param p5  the 5th percentile
 * @param p25 the 25th percentile
 * @param p50 the median
 * @param p75 the 75th percentile
 * @param p95 the 95th percentile
 */
public record ScoreDistribution(
        OptionalDouble p5, OptionalDouble p25, OptionalDouble p50, OptionalDouble p75, OptionalDouble p95) {

    static ScoreDistribution of(EvaluationValueDistribution d) {
        return new ScoreDistribution(
                d.hasP5() ? OptionalDouble.of(d.getP5()) : OptionalDouble.empty(),
                d.hasP25() ? OptionalDouble.of(d.getP25()) : OptionalDouble.empty(),
                d.hasP50() ? OptionalDouble.of(d.getP50()) : OptionalDouble.empty(),
                d.hasP75() ? OptionalDouble.of(d.getP75()) : OptionalDouble.empty(),
                d.hasP95() ? OptionalDouble.of(d.getP95()) : OptionalDouble.empty());
    }
}
