package ai.chalk.compute.server.evaluation.scorer;

import java.util.List;

/** Turns texts into embedding vectors for {@code embedding_similarity}. */
public interface Embedder {

    /**
     * Embeds texts, one vector per text, in order.
     *
     * @param texts the texts
     * @return their vectors
     * @throws RowScoringException when the model or endpoint fails
     */
    List<float[]> embed(List<String> texts);

    /**
     * The model's name, recorded as row metadata.
     *
     * @return the name
     */
    String model();
}
