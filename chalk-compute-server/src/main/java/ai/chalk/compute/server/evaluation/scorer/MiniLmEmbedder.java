package ai.chalk.compute.server.evaluation.scorer;

import dev.langchain4j.data.embedding.Embedding;
import dev.langchain4j.data.segment.TextSegment;
import dev.langchain4j.model.embedding.onnx.allminilml6v2.AllMiniLmL6V2EmbeddingModel;
import java.util.List;

/**
 * The all-MiniLM-L6-v2 sentence-embedding model (384 dimensions), run in this JVM by ONNX Runtime from the copy
 * packaged in LangChain4j's jar: no network, no model hub. It is loaded on first use (about a second, ~90 MB) and
 * then shared, as ONNX Runtime sessions are thread-safe.
 */
final class MiniLmEmbedder implements Embedder {

    static final String MODEL = "all-minilm-l6-v2";

    private static final class Holder {
        static final AllMiniLmL6V2EmbeddingModel MODEL = new AllMiniLmL6V2EmbeddingModel(Runnable::run);
    }

    @Override
    public List<float[]> embed(List<String> texts) {
        List<Embedding> embeddings = Holder.MODEL
                .embedAll(texts.stream().map(TextSegment::from).toList())
                .content();
        return embeddings.stream().map(Embedding::vector).toList();
    }

    @Override
    public String model() {
        return MODEL;
    }
}
