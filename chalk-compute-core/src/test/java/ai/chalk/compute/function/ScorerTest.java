package ai.chalk.compute.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.function.arrow.DecodeContext;
import com.acme.Scorers;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.junit.jupiter.api.Test;

class ScorerTest {

    private final FunctionRegistry registry = new FunctionRegistry();

    @Test
    void scorerParametersBindToColumnsExceptOutputAndTrace() {
        registry.register(Scorers.class);
        assertThat(registry.definitions())
                .extracting(FunctionDefinition::name, FunctionDefinition::kind)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("judged", FunctionKind.SCORER),
                        org.assertj.core.groups.Tuple.tuple("mentionsCity", FunctionKind.SCORER),
                        org.assertj.core.groups.Tuple.tuple("perWord", FunctionKind.SCORER));
        assertThat(registry.get("judged").definition().parameters())
                .extracting(FunctionParameter::name, FunctionParameter::role)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("input", ParameterRole.COLUMN),
                        org.assertj.core.groups.Tuple.tuple("output", ParameterRole.OUTPUT),
                        org.assertj.core.groups.Tuple.tuple("trace", ParameterRole.TRACE));
        assertThat(registry.get("mentionsCity").definition().outputSchema().getCustomMetadata())
                .containsEntry("chalk.function.description", "1 when the answer names the expected city");
        assertThat(registry.get("mentionsCity")
                        .definition()
                        .outputSchema()
                        .findField("output")
                        .getType())
                .isEqualTo(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE));
        Field perWord = registry.get("perWord").definition().outputSchema().findField("output");
        assertThat(perWord.getType()).isEqualTo(ArrowType.List.INSTANCE);
        assertThat(perWord.getChildren().get(0).getMetadata())
                .containsEntry("chalk.python.type", "chalkcompute.EvaluationScorerResult");
    }

    @Test
    void scoresAndScorerResultsTravelWithTheirMetadata() {
        registry.register(Scorers.class);
        RegisteredFunction judged = registry.get("judged");
        Object result = judged.payloads()
                .decodeResult(
                        judged.call(judged.payloads().encodeCall("q", "a longer answer", "plan,search,answer")),
                        DecodeContext.empty());
        assertThat(result)
                .isEqualTo(new EvaluationScorerResult(
                        0.9, Map.of("reason", "length", "steps", 3, "flags", List.of(true, false))));

        RegisteredFunction perWord = registry.get("perWord");
        List<Object> results = perWord.payloads()
                .decodeResults(
                        perWord.call(
                                perWord.payloads().encodeBatch(List.of(new Object[] {"to be"}, new Object[] {""}))),
                        DecodeContext.empty());
        assertThat(results)
                .containsExactly(
                        List.of(
                                EvaluationScorerResult.of(0.2, Map.of("word", "to")),
                                EvaluationScorerResult.of(0.2, Map.of("word", "be"))),
                        List.of());

        RegisteredFunction city = registry.get("mentionsCity");
        assertThat(city.payloads()
                        .decodeResult(
                                city.call(city.payloads().encodeCall("Paris", "It is Paris.")), DecodeContext.empty()))
                .isEqualTo(1.0);
    }

    @Test
    void aScorerResultWithoutMetadataTravelsAsNullMetadata() {
        registry.register(Scorers.class);
        FunctionPayloads payloads = registry.get("judged").payloads();
        EvaluationScorerResult plain = EvaluationScorerResult.of(0.5);
        assertThat(payloads.decodeResult(payloads.encodeResults(List.of(plain)), DecodeContext.empty()))
                .isEqualTo(plain);
        assertThatThrownBy(() -> payloads.encodeResults(java.util.Arrays.asList((Object) null)))
                .hasMessage("row 0, column 'output': null in a non-nullable field of type Struct; declare "
                        + "Optional<EvaluationScorerResult> for a value that may be absent");
    }

    @Test
    void scorerResultsHoldOnlyJsonMetadata() {
        assertThatThrownBy(() -> EvaluationScorerResult.of(Double.NaN)).hasMessage("score must be a number, not NaN");
        assertThatThrownBy(() -> EvaluationScorerResult.of(1, Map.of("when", new Object())))
                .hasMessageStartingWith("metadata.when is a java.lang.Object, which is not JSON-serializable");
        Map<Object, Object> numericKey = new HashMap<>();
        numericKey.put(1, "x");
        assertThatThrownBy(() -> EvaluationScorerResult.of(1, Map.of("nested", numericKey)))
                .hasMessage("metadata.nested has the key 1, but JSON keys are strings");
        assertThatThrownBy(() -> EvaluationScorerResult.of(1, Map.of("ratio", Double.POSITIVE_INFINITY)))
                .hasMessage("metadata.ratio is Infinity, which JSON cannot hold");
        EvaluationScorerResult copied = EvaluationScorerResult.of(1, Map.of("list", List.of(1, "a")));
        assertThatThrownBy(() -> copied.metadata().put("x", 1)).isInstanceOf(UnsupportedOperationException.class);
    }
}
