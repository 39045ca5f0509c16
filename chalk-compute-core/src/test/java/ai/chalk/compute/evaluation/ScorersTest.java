package ai.chalk.compute.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerSpec;
import ai.chalk.compute.server.evaluation.scorer.BuiltinScorers;
import ai.chalk.compute.server.evaluation.scorer.Embedders;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The SDK's scorer ids against the server's built-ins; it needs the in-JVM embedding model, which core's pom puts on
 * the class path of the tests tagged {@code embedding-model} only. */
@Tag("embedding-model")
class ScorersTest {

    /** The server that runs the built-ins, to check it accepts every id the SDK writes. */
    private final BuiltinScorers server = new BuiltinScorers(new Embedders(name -> "value-of-" + name));

    @Test
    void everyFactoryWritesAnIdTheServerAcceptsWithTheSameOptions() {
        List<BuiltinScorer> scorers = List.of(
                Scorers.exactMatch().with("case_insensitive", true).with("collapse_whitespace", true),
                Scorers.levenshtein().with("trim", true),
                Scorers.regexMatch("(?<year>\\d{4})").with("full_match", true).inputs("answer"),
                Scorers.regexMatch(),
                Scorers.contains().with("mode", "fraction"),
                Scorers.numericClose(0.01)
                        .with("rel_tol", 0.05)
                        .with("graded", true)
                        .with("scale", 10),
                Scorers.stringSimilarity("token_set").with("case_insensitive", true),
                Scorers.jsonValid().inputs("output"),
                Scorers.jsonMatch("answer.city", "items.0.id"),
                Scorers.jsonMatch(),
                Scorers.embeddingSimilarity(),
                Scorers.embeddingSimilarity("https://api.openai.com/v1", "text-embedding-3-small", "OPENAI_KEY"));
        assertThat(scorers).extracting(BuiltinScorer::name).containsAll(BuiltinScorers.NAMES);
        for (BuiltinScorer scorer : scorers) {
            assertThat(server.create(scorer.id()).name()).isEqualTo(scorer.name());
        }
        assertThat(server.create(Scorers.jsonValid().inputs("answer").id()).inputs())
                .containsExactly("answer");
        assertThat(server.create(
                                Scorers.exactMatch().inputs("answer", "capital").id())
                        .inputs())
                .containsExactly("answer", "capital");
    }

    @Test
    void idsAreCanonicalSoEqualOptionsPinTheSameScorer() {
        BuiltinScorer a = Scorers.exactMatch().with("trim", false).with("case_insensitive", true);
        BuiltinScorer b = Scorers.exactMatch().with("case_insensitive", true).with("trim", false);
        assertThat(a.id()).isEqualTo(b.id()).isEqualTo("exact_match:{\"case_insensitive\":true,\"trim\":false}");
        assertThat(a).isEqualTo(b);
        assertThat(Scorers.exactMatch().id()).isEqualTo("exact_match");
        EvaluationScorerSpec spec = Scorers.jsonMatch("a.b").toSpec();
        assertThat(spec.getBuiltin().getId()).isEqualTo("json_match:{\"paths\":[\"a.b\"]}");
    }

    @Test
    void aMisspeltOptionFailsWhereItIsWritten() {
        assertThatThrownBy(() -> Scorers.exactMatch().with("ignore_case", true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("exact_match has no option ignore_case; its options are inputs, trim, "
                        + "collapse_whitespace, case_insensitive");
        assertThatThrownBy(() -> new BuiltinScorer("fuzzy", Map.of()))
                .hasMessageStartingWith("there is no built-in scorer fuzzy; the built-ins are exact_match, ");
    }
}
