package ai.chalk.compute.server.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ai.chalk.compute.proto.evaluation.v1.BuiltinScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScoreSummary;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerSpec;
import ai.chalk.compute.proto.evaluation.v1.EvaluationValueDistribution;
import ai.chalk.compute.server.evaluation.ScoreSummaries.RowScores;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Score summaries checked against values computed by hand (NumPy's linear percentiles). */
class ScoreSummariesTest {

    private static final EvaluationScorer A = scorer("exact_match");
    private static final EvaluationScorer B = scorer("levenshtein");

    @Test
    void failuresScoreZeroAndPercentilesInterpolate() {
        EvaluationScoreSummary s = ScoreSummaries.summarize(
                "eval-1",
                "run-1",
                List.of(A, B),
                List.of(
                        ScoreSummaries.answered(List.of(1.0, 0.2)),
                        ScoreSummaries.answered(List.of(0.0, 0.4)),
                        ScoreSummaries.answered(Arrays.asList(0.5, null)),
                        new RowScores("the task threw IllegalStateException: boom", List.of())),
                Instant.ofEpochSecond(1_700_000_000));

        assertThat(s.getEvaluationId()).isEqualTo("eval-1");
        assertThat(s.getEvaluationRunId()).isEqualTo("run-1");
        assertThat(s.getMetricsMap())
                .containsEntry(ScoreSummaries.ROWS, 4.0)
                .containsEntry(ScoreSummaries.FAILED_ROWS, 1.0)
                .containsEntry(ScoreSummaries.SCORER_FAILURES, 1.0);

        // exact_match: [1, 0, 0.5, 0] → sorted [0, 0, 0.5, 1]
        assertThat(s.getScorerScores(0).getScorer()).isEqualTo(A);
        assertThat(s.getScorerScores(0).getAverageScore()).isCloseTo(0.375, within(1e-12));
        distribution(s.getScorerScores(0).getDistribution(), 0, 0, 0.25, 0.625, 0.925);
        // levenshtein: [0.2, 0.4, 0 (scorer failed), 0 (row failed)] → sorted [0, 0, 0.2, 0.4]
        assertThat(s.getScorerScores(1).getAverageScore()).isCloseTo(0.15, within(1e-12));
        distribution(s.getScorerScores(1).getDistribution(), 0, 0, 0.1, 0.25, 0.37);
        // overall, per row the mean of its scores: [0.6, 0.2, 0.25, 0] → sorted [0, 0.2, 0.25, 0.6]
        assertThat(s.getAverageScore()).isCloseTo(0.2625, within(1e-12));
        distribution(s.getScoreDistribution(), 0.03, 0.15, 0.225, 0.3375, 0.5475);
    }

    @Test
    void noRowsHaveNoAveragesAndOneRowIsItsOwnDistribution() {
        EvaluationScoreSummary empty = ScoreSummaries.summarize("e", "r", List.of(A), List.of(), Instant.EPOCH);
        assertThat(empty.hasAverageScore()).isFalse();
        assertThat(empty.getScorerScores(0).hasAverageScore()).isFalse();
        assertThat(empty.getMetricsMap()).containsEntry(ScoreSummaries.ROWS, 0.0);

        EvaluationScoreSummary one = ScoreSummaries.summarize(
                "e", "r", List.of(A), List.of(ScoreSummaries.answered(List.of(0.7))), Instant.EPOCH);
        assertThat(one.getAverageScore()).isCloseTo(0.7, within(1e-12));
        distribution(one.getScoreDistribution(), 0.7, 0.7, 0.7, 0.7, 0.7);
    }

    private static void distribution(EvaluationValueDistribution d, double... expected) {
        assertThat(new double[] {d.getP5(), d.getP25(), d.getP50(), d.getP75(), d.getP95()})
                .containsExactly(expected, within(1e-12));
    }

    private static EvaluationScorer scorer(String id) {
        return EvaluationScorer.newBuilder()
                .setId(id)
                .setSpec(EvaluationScorerSpec.newBuilder()
                        .setBuiltin(BuiltinScorer.newBuilder().setId(id)))
                .build();
    }
}
