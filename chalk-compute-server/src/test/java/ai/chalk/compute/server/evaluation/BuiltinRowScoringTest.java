package ai.chalk.compute.server.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ai.chalk.compute.proto.evaluation.v1.BuiltinScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerSpec;
import ai.chalk.compute.proto.evaluation.v1.FunctionScorer;
import ai.chalk.compute.server.evaluation.BuiltinRowScoring.Cell;
import ai.chalk.compute.server.evaluation.scorer.BuiltinScorers;
import ai.chalk.compute.server.evaluation.scorer.Embedders;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The real built-ins scoring rows as a run does: scores, metadata JSON, and a failing cell that spares the others. */
class BuiltinRowScoringTest {

    private final BuiltinRowScoring scoring = new BuiltinRowScoring(
            List.of(
                    builtin("exact_match", "exact_match:{\"case_insensitive\":true}"),
                    EvaluationScorer.newBuilder()
                            .setId("judge")
                            .setSpec(EvaluationScorerSpec.newBuilder()
                                    .setFunction(FunctionScorer.newBuilder().setFunctionVersionId("fv-1")))
                            .build(),
                    builtin("levenshtein", "levenshtein"),
                    builtin("numeric_close", "numeric_close:{\"inputs\":[\"guess\",\"price\"],\"abs_tol\":0.5}")),
            new BuiltinScorers(new Embedders(name -> null)));

    @Test
    void scoresEachBuiltinAndSkipsFunctionScorers() {
        List<Cell> cells = scoring.score(Map.of("output", "Paris", "expected", "paris", "guess", 3.4, "price", 3.0));
        assertThat(cells).extracting(Cell::scorerId).containsExactly("exact_match", "levenshtein", "numeric_close");
        assertThat(cells.get(0).score()).isEqualTo(1.0);
        // "Paris" vs "paris": one substitution over five characters
        assertThat(cells.get(1).score()).isCloseTo(0.8, within(1e-12));
        assertThat(cells.get(1).metadata()).contains("\"distance\":1");
        assertThat(cells.get(2).score()).isEqualTo(1.0);
        assertThat(cells.get(2).metadata()).contains("\"within_tolerance\":true");
        assertThat(cells).allSatisfy(c -> assertThat(c.error()).isNull());
    }

    @Test
    void aRowOneScorerCannotScoreFailsOnlyThatCell() {
        Map<String, Object> row = new HashMap<>();
        row.put("output", "not a number");
        row.put("expected", "not a number");
        row.put("guess", 3.4);
        row.put("price", "n/a"); // a reference that is not a number cannot be scored; a wrong guess scores 0
        List<Cell> cells = scoring.score(row);
        assertThat(cells.get(0).score()).isEqualTo(1.0);
        assertThat(cells.get(1).score()).isEqualTo(1.0);
        assertThat(cells.get(2).score()).isNull();
        assertThat(cells.get(2).metadata()).isEqualTo("{}");
        assertThat(cells.get(2).error()).isEqualTo("numeric_close: column 'price' is not a number: 'n/a'");
    }

    @Test
    void metadataIsWrittenAsJacksonWritesIt() throws Exception {
        ObjectMapper jackson = new ObjectMapper();
        Map<String, Object> withNull = new LinkedHashMap<>();
        withNull.put("difference", 0.5);
        withNull.put("relative_difference", null);
        withNull.put("within_tolerance", false);
        List<Map<String, Object>> cases = List.of(
                Map.of(),
                Map.of("match", true),
                withNull,
                Map.of("distance", 3, "length", 12L),
                Map.of("tiny", 1e-300, "huge", 1.5e300, "negative_zero", -0.0, "third", 1.0 / 3),
                // these go through Jackson: text, a non-finite number, a nested value, a key needing escapes
                Map.of("error", "a \"quoted\" line\nand a tab\t"),
                Map.of("nan", Double.NaN),
                Map.of("results", List.of(1, 2)),
                Map.of("a key", 1),
                Map.of("float", 0.1f));
        for (Map<String, Object> m : cases) {
            assertThat(BuiltinRowScoring.metadataJson(m)).as("%s", m).isEqualTo(jackson.writeValueAsString(m));
        }
    }

    private static EvaluationScorer builtin(String id, String spec) {
        return EvaluationScorer.newBuilder()
                .setId(id)
                .setSpec(EvaluationScorerSpec.newBuilder()
                        .setBuiltin(BuiltinScorer.newBuilder().setId(spec)))
                .build();
    }
}
