package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.proto.evaluation.v1.EvaluationScoreSummary;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerScoreSummary;
import ai.chalk.compute.proto.evaluation.v1.EvaluationValueDistribution;
import com.google.protobuf.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A run's {@link EvaluationScoreSummary} from its rows' scores. A row whose task failed scores 0 with every scorer, and
 * so does a scorer that failed on a row: a failure is a wrong answer, and leaving it out would make a run that fails
 * more rows look better. The overall score of a row is the mean of its scorers' scores; percentiles interpolate
 * linearly between the closest ranks (NumPy's default), so they match what users compute from the result dataset.
 */
final class ScoreSummaries {

    /** Metric: rows in the run. */
    static final String ROWS = "rows";
    /**
     * Metric of a run under way, in the summary {@code ListEvaluationRuns} gives for it until its own: rows whose task
     * and scorers are done. The contract's run has no progress field; a summary's metrics are where it fits.
     */
    static final String ROWS_DONE = "rows_done";
    /** Metric: rows whose task failed. */
    static final String FAILED_ROWS = "failed_rows";
    /** Metric: (row, scorer) pairs where the scorer failed although the task answered. */
    static final String SCORER_FAILURES = "scorer_failures";

    /**
     * One row's outcome.
     *
     * @param error  why the task failed on the row, or null when it answered
     * @param scores each scorer's score in scorer order, null where that scorer failed; ignored when {@code error}
     */
    record RowScores(@Nullable String error, List<@Nullable Double> scores) {}

    private ScoreSummaries() {}

    /**
     * The summary of a run under way: metrics {@link #ROWS} (its total) and {@link #ROWS_DONE}, no scores yet.
     */
    static EvaluationScoreSummary progress(String evaluationId, String runId, long rowsDone, long rows, Instant at) {
        return EvaluationScoreSummary.newBuilder()
                .setEvaluationId(evaluationId)
                .setEvaluationRunId(runId)
                .setCreatedAt(
                        Timestamp.newBuilder().setSeconds(at.getEpochSecond()).setNanos(at.getNano()))
                .putMetrics(ROWS, rows)
                .putMetrics(ROWS_DONE, rowsDone)
                .build();
    }

    /** The summary of {@code rows} scored by {@code scorers}; averages and percentiles are absent with no rows. */
    static EvaluationScoreSummary summarize(
            String evaluationId, String runId, List<EvaluationScorer> scorers, List<RowScores> rows, Instant at) {
        int n = rows.size();
        double[][] byScorer = new double[scorers.size()][n];
        double[] overall = new double[n];
        int failedRows = 0;
        int scorerFailures = 0;
        for (int r = 0; r < n; r++) {
            RowScores row = rows.get(r);
            if (row.error() != null) {
                failedRows++;
            } else if (row.scores().size() != scorers.size()) {
                throw new IllegalArgumentException(
                        "row " + r + " has " + row.scores().size() + " scores for " + scorers.size() + " scorers");
            }
            double sum = 0;
            for (int s = 0; s < scorers.size(); s++) {
                Double score = row.error() != null ? null : row.scores().get(s);
                if (score == null && row.error() == null) {
                    scorerFailures++;
                }
                byScorer[s][r] = score == null ? 0 : score;
                sum += byScorer[s][r];
            }
            overall[r] = scorers.isEmpty() ? 0 : sum / scorers.size();
        }
        EvaluationScoreSummary.Builder b = EvaluationScoreSummary.newBuilder()
                .setEvaluationId(evaluationId)
                .setEvaluationRunId(runId)
                .setCreatedAt(
                        Timestamp.newBuilder().setSeconds(at.getEpochSecond()).setNanos(at.getNano()))
                .putMetrics(ROWS, n)
                .putMetrics(ROWS_DONE, n)
                .putMetrics(FAILED_ROWS, failedRows)
                .putMetrics(SCORER_FAILURES, scorerFailures);
        for (int s = 0; s < scorers.size(); s++) {
            EvaluationScorerScoreSummary.Builder sb =
                    EvaluationScorerScoreSummary.newBuilder().setScorer(scorers.get(s));
            if (n > 0) {
                sb.setAverageScore(mean(byScorer[s])).setDistribution(distribution(byScorer[s]));
            }
            b.addScorerScores(sb);
        }
        if (n > 0 && !scorers.isEmpty()) {
            b.setAverageScore(mean(overall)).setScoreDistribution(distribution(overall));
        }
        return b.build();
    }

    /** p5, p25, p50, p75 and p95 of {@code values}, which must not be empty. */
    static EvaluationValueDistribution distribution(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return EvaluationValueDistribution.newBuilder()
                .setP5(percentile(sorted, 5))
                .setP25(percentile(sorted, 25))
                .setP50(percentile(sorted, 50))
                .setP75(percentile(sorted, 75))
                .setP95(percentile(sorted, 95))
                .build();
    }

    /** The {@code p}th percentile of sorted, non-empty values, interpolating linearly between the closest ranks. */
    static double percentile(double[] sorted, double p) {
        double position = p / 100 * (sorted.length - 1);
        int below = (int) Math.floor(position);
        int above = Math.min(below + 1, sorted.length - 1);
        return sorted[below] + (position - below) * (sorted[above] - sorted[below]);
    }

    private static double mean(double[] values) {
        double sum = 0;
        for (double v : values) {
            sum += v;
        }
        return sum / values.length;
    }

    /** The scores of a row where the task answered, for callers building rows from nullable lists. */
    static RowScores answered(List<@Nullable Double> scores) {
        return new RowScores(null, new ArrayList<>(scores));
    }
}
