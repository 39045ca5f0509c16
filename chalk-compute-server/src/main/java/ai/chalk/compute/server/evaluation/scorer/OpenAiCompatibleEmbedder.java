package ai.chalk.compute.server.evaluation.scorer;

import ai.chalk.compute.server.outbound.BoundedAnswer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Embeddings from an OpenAI-compatible {@code POST /embeddings} endpoint. The API key goes only into the
 * Authorization header; no message built here contains it.
 */
final class OpenAiCompatibleEmbedder implements Embedder {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    /** The most of an answer read: a batch's vectors are a few MiB at most. */
    static final int MAX_ANSWER_BYTES = 64 << 20;

    /** For the answer's headers, and again for its body. */
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

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
                .timeout(TIMEOUT)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
        if (apiKey != null) {
            request.header("Authorization", "Bearer " + apiKey);
        }
        refuseNeverAnEndpoint();
        BoundedAnswer response;
        try {
            response = BoundedAnswer.send(HTTP, request.build(), MAX_ANSWER_BYTES, TIMEOUT);
        } catch (IOException e) {
            throw new RowScoringException("the embeddings endpoint " + endpoint + " could not be reached: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RowScoringException("interrupted while waiting for the embeddings endpoint");
        }
        if (response.status() != 200) {
            throw new RowScoringException(
                    "the embeddings endpoint " + endpoint + " answered HTTP " + response.status());
        }
        if (response.tooLarge()) {
            throw new RowScoringException("the embeddings endpoint " + endpoint + " answered more than "
                    + (MAX_ANSWER_BYTES >> 20) + " MiB, the most the server reads for one batch");
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

    /**
     * Refuses an endpoint whose name gives a link-local, unspecified or multicast address, or a cloud's metadata
     * service: the server calls the endpoint from its own network, where {@code 169.254.169.254} hands out the host's
     * credentials, and no embeddings endpoint is ever there.
     */
    private void refuseNeverAnEndpoint() {
        InetAddress[] addresses;
        try {
            addresses = InetAddress.getAllByName(endpoint.getHost());
        } catch (UnknownHostException e) {
            throw new RowScoringException("the embeddings endpoint " + endpoint + " names an unknown host");
        }
        for (InetAddress a : addresses) {
            if (a.isLinkLocalAddress() || a.isAnyLocalAddress() || a.isMulticastAddress() || METADATA.contains(a)) {
                throw new RowScoringException("the embeddings endpoint " + endpoint + " is at " + a.getHostAddress()
                        + ", a link-local, unspecified, multicast or cloud metadata address the server never calls");
            }
        }
    }

    private static final Set<InetAddress> METADATA = Set.of(address("100.100.100.200"), address("fd00:ec2::254"));

    private static InetAddress address(String literal) {
        try {
            return InetAddress.getByName(literal);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(literal + " is an address literal", e);
        }
    }

    @Override
    public String model() {
        return model;
    }
}
