package ai.chalk.compute.server.evaluation.scorer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code embedding_similarity} through an OpenAI-compatible embeddings endpoint. A hosted embeddings API cannot run
 * here, so a stand-in on loopback answers {@code POST /v1/embeddings} with each text's letter counts (26 dimensions),
 * whose cosines the test can work out by hand; model {@code down} answers 500.
 */
class EmbeddingEndpointTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String KEY = "sk-embeddings-stand-in-91d2";

    private HttpServer standIn;
    private final List<String> authorizations = new CopyOnWriteArrayList<>();
    private final List<JsonNode> requests = new CopyOnWriteArrayList<>();
    private BuiltinScorers scorers;

    @BeforeEach
    void startStandIn() throws IOException {
        standIn = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8);
        standIn.createContext("/v1/embeddings", exchange -> {
            try (exchange) {
                JsonNode body = JSON.readTree(exchange.getRequestBody());
                requests.add(body);
                authorizations.add(String.valueOf(exchange.getRequestHeaders().getFirst("Authorization")));
                String reply;
                int status = 200;
                if (body.path("model").asText().equals("endless")) {
                    // a valid start, then no end: the server reads a bounded amount and lets go
                    exchange.sendResponseHeaders(200, 0);
                    byte[] chunk = new byte[1 << 20];
                    java.util.Arrays.fill(chunk, (byte) ' ');
                    try (OutputStream out = exchange.getResponseBody()) {
                        out.write("{\"data\":[".getBytes(StandardCharsets.UTF_8));
                        for (int i = 0; i < 1024; i++) {
                            out.write(chunk);
                        }
                    } catch (IOException closedByTheReader) {
                        // what the bound does
                    }
                    return;
                }
                if (body.path("model").asText().equals("down")) {
                    status = 500;
                    reply = "{\"error\":{\"message\":\"overloaded\"}}";
                } else {
                    ObjectNode answer = JSON.createObjectNode();
                    ArrayNode data = answer.putArray("data");
                    int index = 0;
                    for (JsonNode text : body.path("input")) {
                        ArrayNode vector =
                                data.addObject().put("index", index++).putArray("embedding");
                        int[] counts = new int[26];
                        text.asText()
                                .toLowerCase()
                                .chars()
                                .filter(c -> c >= 'a' && c <= 'z')
                                .forEach(c -> counts[c - 'a']++);
                        for (int count : counts) {
                            vector.add(count);
                        }
                    }
                    reply = answer.toString();
                }
                byte[] bytes = reply.getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders(status, bytes.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(bytes);
                }
            }
        });
        standIn.start();
        scorers = new BuiltinScorers(new Embedders(name -> name.equals("EMBEDDINGS_KEY") ? KEY : null));
    }

    @AfterEach
    void stopStandIn() {
        standIn.stop(0);
    }

    private String id(String model) {
        return "embedding_similarity:{\"base_url\":\"http://127.0.0.1:"
                + standIn.getAddress().getPort() + "/v1\",\"model\":\"" + model
                + "\",\"api_key_secret\":\"EMBEDDINGS_KEY\"}";
    }

    @Test
    void theEndpointsEmbeddingsAreComparedByCosineWithTheKeyReadFromTheSecret() {
        RowScore score = scorers.create(id("letters")).score(Map.of("output", "ab", "expected", "aab"));
        // (1,1)·(2,1) / (√2·√5) = 3/√10
        assertThat(score.score()).isCloseTo(3 / Math.sqrt(10), within(1e-6));
        assertThat(score.metadata()).containsEntry("model", "letters");
        assertThat(authorizations).containsExactly("Bearer " + KEY);
        assertThat(requests.get(0).path("input").toString()).isEqualTo("[\"ab\",\"aab\"]");
        assertThat(scorers.create(id("letters"))
                        .score(Map.of("output", "abc", "expected", "xyz"))
                        .score())
                .isEqualTo(0.0);
    }

    @Test
    void aFailingEndpointFailsTheRowWithoutShowingTheKey() {
        BuiltinScorer scorer = scorers.create(id("down"));
        assertThatThrownBy(() -> scorer.score(Map.of("output", "a", "expected", "b")))
                .isInstanceOf(RowScoringException.class)
                .hasMessageContaining("answered HTTP 500")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain(KEY));
        assertThatThrownBy(() -> scorers.create("embedding_similarity:{\"base_url\":\"file:///etc\",\"model\":\"m\"}"))
                .hasMessageContaining("base_url must be an http or https URL");
    }

    @Test
    void anAnswerPastTheBoundFailsTheRowNotTheServer() {
        BuiltinScorer scorer = scorers.create(id("endless"));
        assertThatThrownBy(() -> scorer.score(Map.of("output", "a", "expected", "b")))
                .isInstanceOf(RowScoringException.class)
                .hasMessageContaining("answered more than 64 MiB");
    }

    @Test
    void metadataAndLinkLocalAddressesAreNeverCalled() {
        for (String host : List.of("169.254.169.254", "100.100.100.200", "[fe80::1]", "[fd00:ec2::254]", "0.0.0.0")) {
            BuiltinScorer scorer = scorers.create("embedding_similarity:{\"base_url\":\"http://" + host + ":"
                    + standIn.getAddress().getPort() + "/v1\",\"model\":\"letters\"}");
            assertThatThrownBy(() -> scorer.score(Map.of("output", "a", "expected", "b")))
                    .as(host)
                    .isInstanceOf(RowScoringException.class)
                    .hasMessageContaining("the server never calls");
        }
        assertThat(requests).as("requests the stand-in received").isEmpty();
    }
}
