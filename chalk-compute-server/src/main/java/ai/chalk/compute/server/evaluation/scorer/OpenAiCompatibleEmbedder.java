package ai.chalk.compute.server.evaluation.scorer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Embeddings from an OpenAI-compatible {@code POST /embeddings} endpoint. The API key goes only into the
 * Authorization header; no message built here contains it.
 */
final class OpenAiCompatibleEmbedder implements Embedder {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private final URI endpoint;
    private final String model;
    private final @Nullable String apiKey;

    OpenAiCompatibleEmbedder(String baseUrl, String model, @Nullable String apiKey) {
        URI base = URI.create(baseUrl.endsWith("/") ? baseUrl : baseUrl + "/");
        if (!"http".equals(base.getScheme()) && !"https".equals(base.getScheme())) {
            throw new IllegalArgumentException(
                    "embedding_similarity base_url must be an http or https URL, not " + base.getScheme() + ":");
        }
        this.endpoint = base.resolve("embeddings");
        this.model = model;
        this.apiKey = apiKey;
    }

    @Override
    public List<float[]> embed(List<String> texts) {
        ObjectNode body = JSON.createObjectNode().put("model", model);
        ArrayNode input = body.putArray("input");
        texts.forEach(input::add);
        HttpRequest.Builder request = HttpRequest.newBuilder(endpoint)
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
        if (apiKey != null) {
            request.header("Authorization", "Bearer " + apiKey);
        }
        HttpResponse<String> response;
        try {
            response = HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new RowScoringException("the embeddings endpoint " + endpoint + " could not be reached: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RowScoringException("interrupted while waiting for the embeddings endpoint");
        }
        if (response.statusCode() != 200) {
            throw new RowScoringException(
                    "the embeddings endpoint " + endpoint + " answered HTTP " + response.statusCode());
        }
        try {
            JsonNode data = JSON.readTree(response.body()).path("data");
            List<float[]> vectors = new ArrayList<>();
            for (int i = 0; i < texts.size(); i++) {
                JsonNode embedding = data.path(i).path("embedding");
                if (!embedding.isArray() || embedding.isEmpty()) {
                    throw new RowScoringException(
                            "the embeddings endpoint " + endpoint + " gave no embedding for input " + i);
                }
                float[] vector = new float[embedding.size()];
                for (int d = 0; d < vector.length; d++) {
                    vector[d] = (float) embedding.get(d).asDouble();
                }
                vectors.add(vector);
            }
            return vectors;
        } catch (IOException e) {
            throw new RowScoringException("the embeddings endpoint " + endpoint + " answered with invalid JSON");
        }
    }

    @Override
    public String model() {
        return model;
    }
}
