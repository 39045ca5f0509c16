package ai.chalk.compute.evaluation;

import ai.chalk.compute.proto.evaluation.v1.EvaluationScoreSummary;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerScoreSummary;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.TreeMap;

/**
 * The scores of a finished run: the average and percentiles over all scorers and for each, and metrics such as
 * {@code rows}, {@code failed_rows} and {@code scorer_failures}. A row whose task failed scores 0 with every scorer.
 * <pre>{@code
 * ScoreSummary summary = run.scoreSummary().orElseThrow();
 * summary.averageScore();                       // over every scorer and row
 * summary.scorer("exact_match").averageScore(); // one scorer
 * summary.metrics().get("failed_rows");
 * }</pre>
 *
 * @param evaluationId        the evaluation
 * @param runId               the run
 * @param averageScore        the mean of every score of every row; empty when there were none
 * @param distribution        the percentiles of those scores
 * @param scorers             each scorer's average and percentiles, in the evaluation's order
 * @param metrics             run-wide numbers by name, such as {@code rows} and {@code failed_rows}
 * @param metricDistributions percentiles of per-row metrics, by name
 * @param createdAt           when the summary was computed
 */
public record ScoreSummary(
        String evaluationId,
        String runId,
        OptionalDouble averageScore,
        ScoreDistribution distribution,
        List<ScorerScore> scorers,
        Map<String, Double> metrics,
        Map<String, ScoreDistribution> metricDistributions,
        Instant createdAt) {

    /** Copies the lists and maps. */
    public ScoreSummary {
        scorers = List.copyOf(scorers);
        metrics = java.util.Collections.unmodifiableMap(new TreeMap<>(metrics));
        metricDistributions = java.util.Collections.unmodifiableMap(new TreeMap<>(metricDistributions));
    }

    /**
     * One scorer's scores in a run.
     *
     * @param scorer       the scorer, as the evaluation pinned it
     * @param averageScore the mean of its scores; empty when it gave none
     * @param distribution their percentiles
     */
    public record ScorerScore(EvaluationScorer scorer, OptionalDouble averageScore, ScoreDistribution distribution) {

        static ScorerScore of(EvaluationScorerScoreSummary s) {
            return new ScorerScore(
                    EvaluationScorer.of(s.getScorer()),
                    s.hasAverageScore() ? OptionalDouble.of(s.getAverageScore()) : OptionalDouble.empty(),
                    ScoreDistribution.of(s.getDistribution()));
        }
    }

    /**
     * One scorer's scores, by its id in the evaluation.
     *
     * @param scorerId the scorer's id, such as {@code exact_match} or {@code priceAccuracy}
     * @return its scores
     * @throws IllegalArgumentException when the evaluation has no scorer of that id (the message lists them)
     */
    public ScorerScore scorer(String scorerId) {
        return scorers.stream()
                .filter(s -> s.scorer().id().equals(scorerId))
                .findFirst()
                .orElseThrow(
                        () -> new IllegalArgumentException("the run has no scorer " + scorerId + "; its scorers are "
                                + scorers.stream().map(s -> s.scorer().id()).toList()));
    }

    /**
     * The summary as a few readable lines: the overall average, then each scorer's average and median, then the
     * metrics.
     *
     * @return the text, ending with a newline
     */
    public String format() {
        StringBuilder out = new StringBuilder();
        out.append(String.format(java.util.Locale.ROOT, "%-24s %s%n", "average", number(averageScore)));
        for (ScorerScore s : scorers) {
            out.append(String.format(
                    java.util.Locale.ROOT,
                    "%-24s %s (median %s)%n",
                    s.scorer().id(),
                    number(s.averageScore()),
                    number(s.distribution().p50())));
        }
        metrics.forEach((name, value) -> out.append(String.format(
                java.util.Locale.ROOT,
                "%-24s %s%n",
                name,
                value == Math.rint(value) ? Long.toString((long) (double) value) : value.toString())));
        return out.toString();
    }

    private static String number(OptionalDouble value) {
        return value.isPresent() ? String.format(java.util.Locale.ROOT, "%.3f", value.getAsDouble()) : "-";
    }

    static ScoreSummary of(EvaluationScoreSummary s) {
        Map<String, ScoreDistribution> metricDistributions = new LinkedHashMap<>();
        s.getMetricDistributionsMap().forEach((k, v) -> metricDistributions.put(k, ScoreDistribution.of(v)));
        return new ScoreSummary(
                s.getEvaluationId(),
                s.getEvaluationRunId(),
                s.hasAverageScore() ? OptionalDouble.of(s.getAverageScore()) : OptionalDouble.empty(),
                ScoreDistribution.of(s.getScoreDistribution()),
                s.getScorerScoresList().stream().map(ScorerScore::of).toList(),
                s.getMetricsMap(),
                metricDistributions,
                Optional.of(s.getCreatedAt())
                        .map(t -> Instant.ofEpochSecond(t.getSeconds(), t.getNanos()))
                        .orElseThrow());
    }
}
