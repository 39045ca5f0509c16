package ai.chalk.compute.function.arrow;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import java.util.Map;

/**
 * Carries an {@link EvaluationScorerResult} as {@code {score: float64, metadata: utf8}}, the metadata
 * as a JSON object (null when there is none), marked {@code chalk.python.type=chalkcompute.EvaluationScorerResult}.
 */
final class ScorerResultArrowType
        implements CustomArrowType<EvaluationScorerResult, ScorerResultArrowType.StoredResult> {

    /** The wire form. */
    record StoredResult(double score, String metadata) {}

    private static final TypeReference<Map<String, Object>> JSON_OBJECT = new TypeReference<>() {};

    @Override
    public Class<EvaluationScorerResult> javaType() {
        return EvaluationScorerResult.class;
    }

    @Override
    public Class<StoredResult> storageType() {
        return StoredResult.class;
    }

    @Override
    public StoredResult toStorage(EvaluationScorerResult result) {
        if (result.metadata().isEmpty()) {
            return new StoredResult(result.score(), null);
        }
        try {
            return new StoredResult(result.score(), Json.MAPPER.writeValueAsString(result.metadata()));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(
                    "the scorer result's metadata cannot be written as JSON: " + e.getOriginalMessage(), e);
        }
    }

    @Override
    public EvaluationScorerResult fromStorage(StoredResult stored, DecodeContext context) {
        if (stored.metadata() == null || stored.metadata().isEmpty()) {
            return EvaluationScorerResult.of(stored.score());
        }
        try {
            return new EvaluationScorerResult(stored.score(), Json.MAPPER.readValue(stored.metadata(), JSON_OBJECT));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(
                    "the scorer result's metadata is not a JSON object: " + e.getOriginalMessage(), e);
        }
    }

    @Override
    public Map<String, String> metadata() {
        return Map.of(ChalkMetadata.PYTHON_TYPE, "chalkcompute.EvaluationScorerResult");
    }
}
