package ai.chalk.compute.server.evaluation.scorer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * {@code embedding_similarity}: the cosine similarity of the two columns' embeddings, for an answer that is right
 * but worded differently. The score is the cosine clipped at 0 (opposed meanings score as unrelated ones); the raw
 * cosine is kept.
 */
final class EmbeddingSimilarityScorer implements BuiltinScorer {

    private final List<String> inputs;
    private final Embedder embedder;

    EmbeddingSimilarityScorer(ScorerOptions options, Embedders embedders) {
        this.inputs = options.inputs(BuiltinScorers.PAIR);
        String model = options.string("model", null);
        String baseUrl = options.string("base_url", null);
        String apiKeySecret = options.string("api_key_secret", null);
        this.embedder = embedders.embedder(model, baseUrl, apiKeySecret);
    }

    @Override
    public String name() {
        return "embedding_similarity";
    }

    @Override
    public List<String> inputs() {
        return inputs;
    }

    @Override
    public RowScore score(Map<String, @Nullable Object> row) {
        List<float[]> vectors =
                embedder.embed(List.of(RowValues.text(row, inputs.get(0)), RowValues.text(row, inputs.get(1))));
        double cosine = cosine(vectors.get(0), vectors.get(1));
        Map<String, @Nullable Object> metadata = new LinkedHashMap<>();
        metadata.put("cosine", cosine);
        metadata.put("model", embedder.model());
        return new RowScore(Math.max(0, Math.min(1, cosine)), metadata);
    }

    static double cosine(float[] a, float[] b) {
        if (a.length != b.length) {
            throw new RowScoringException(
                    "the two embeddings have different dimensions (" + a.length + " and " + b.length + ")");
        }
        double dot = 0;
        double normA = 0;
        double normB = 0;
        for (int i = 0; i < a.length; i++) {
            dot += (double) a[i] * b[i];
            normA += (double) a[i] * a[i];
            normB += (double) b[i] * b[i];
        }
        return normA == 0 || normB == 0 ? 0 : dot / Math.sqrt(normA * normB);
    }
}
