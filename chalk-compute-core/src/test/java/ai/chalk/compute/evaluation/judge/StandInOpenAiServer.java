package ai.chalk.compute.evaluation.judge;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Stands in for a hosted LLM provider, which cannot run on this machine: an OpenAI-compatible
 * {@code POST /v1/chat/completions} on loopback that answers deterministically by model name. {@code grader} fills
 * the request's JSON schema (every number at its maximum when the prompt contains "Welcome", at its minimum
 * otherwise; truncated JSON when it contains "MALFORMED"), {@code malformed} sends truncated JSON, {@code out-of-range} a score of 7, {@code plain-text} refuses
 * structured outputs and answers in prose, {@code busy} answers 429 once then grades, {@code broken} always 500 (its
 * error message echoes the API key, as a careless proxy might). JEV: {@code cheap} gives token log-probabilities
 * (0.97 for Y, or 0.6 when the prompt says "ambiguous") while reporting 0.99 itself, {@code cheap-no-logprobs} only
 * self-reports, {@code strong} answers N at 0.99. Every request is recorded.
 */
final class StandInOpenAiServer implements AutoCloseable {

    /** One request as received. */
    record Received(String authorization, JsonNode body) {}

    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServer server;
    private final List<Received> received = new CopyOnWriteArrayList<>();
    private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();

    StandInOpenAiServer() throws IOException {
        this(InetAddress.getLoopbackAddress());
    }

    /** Listening on {@code address} (the host's end of a test network, for sandboxes to reach through a relay). */
    StandInOpenAiServer(InetAddress address) throws IOException {
        server = HttpServer.create(new InetSocketAddress(address, 0), 16);
        server.createContext("/v1/chat/completions", this::handle);
        server.start();
    }

    int port() {
        return server.getAddress().getPort();
    }

    String baseUrl() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1";
    }

    List<Received> received() {
        return received;
    }

    int calls(String model) {
        return calls.getOrDefault(model, new AtomicInteger()).get();
    }

    @Override
    public void close() {
        server.stop(0);
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            JsonNode body = JSON.readTree(exchange.getRequestBody());
            String authorization = exchange.getRequestHeaders().getFirst("Authorization");
            received.add(new Received(authorization == null ? "" : authorization, body));
            String model = body.path("model").asText();
            int call = calls.computeIfAbsent(model, m -> new AtomicInteger()).incrementAndGet();
            String user = body.path("messages").path(1).path("content").asText();
            switch (model) {
                case "grader" -> {
                    if (user.contains("MALFORMED")) { // one bad row among good ones
                        reply(exchange, completion("{\"score\": 1, \"reason\": ", null));
                    } else {
                        reply(
                                exchange,
                                completion(fill(body, user.contains("Welcome")).toString(), null));
                    }
                }
                case "malformed" -> reply(exchange, completion("{\"score\": 0.5, \"reason\": ", null));
                case "out-of-range" -> {
                    ObjectNode grade = fill(body, true);
                    grade.put("score", 7);
                    reply(exchange, completion(grade.toString(), null));
                }
                case "plain-text" -> {
                    if (body.has("response_format")) {
                        error(exchange, 400, "response_format is not supported by this model");
                    } else {
                        reply(exchange, completion("SCORE: 0.8\nREASON: reached the dashboard", null));
                    }
                }
                case "busy" -> {
                    if (call == 1) {
                        exchange.getResponseHeaders().set("Retry-After", "0");
                        error(exchange, 429, "Rate limit reached; try again in 0s");
                    } else {
                        reply(exchange, completion(fill(body, true).toString(), null));
                    }
                }
                case "broken" -> error(exchange, 500, "internal error while serving " + authorization);
                case "verbose" -> reply(exchange, completion("x".repeat(20 << 20), null));
                case "cheap" -> {
                    double p = user.contains("ambiguous") ? 0.6 : 0.97;
                    reply(exchange, verdict("Y", Map.of("Y", 0.99, "N", 0.01), Map.of("Y", p, "N", 1 - p)));
                }
                case "cheap-no-logprobs" -> {
                    double p = user.contains("ambiguous") ? 0.55 : 0.95;
                    reply(exchange, verdict("Y", Map.of("Y", p, "N", 1 - p), null));
                }
                case "strong" ->
                    reply(exchange, verdict("N", Map.of("Y", 0.01, "N", 0.99), Map.of("Y", 0.01, "N", 0.99)));
                default -> error(exchange, 404, "The model `" + model + "` does not exist");
            }
        }
    }

    /** A grade filling the request's schema: numbers at their maximum (good) or minimum (bad). */
    private static ObjectNode fill(JsonNode request, boolean good) {
        JsonNode schema = request.path("response_format").path("json_schema").path("schema");
        ObjectNode grade = JSON.createObjectNode();
        schema.path("properties").fields().forEachRemaining(property -> {
            JsonNode type = property.getValue();
            switch (type.path("type").asText()) {
                case "number", "integer" -> grade.set(property.getKey(), type.path(good ? "maximum" : "minimum"));
                case "boolean" -> grade.put(property.getKey(), good);
                case "array" -> grade.putArray(property.getKey()).add("step");
                default ->
                    grade.put(
                            property.getKey(),
                            type.has("enum")
                                    ? type.path("enum").path(0).asText()
                                    : good ? "reached the dashboard directly" : "never logged in");
            }
        });
        return grade;
    }

    private static ObjectNode verdict(String label, Map<String, Double> reported, Map<String, Double> tokens) {
        ObjectNode content = JSON.createObjectNode().put("label", label);
        ObjectNode probabilities = content.putObject("probabilities");
        reported.forEach(probabilities::put);
        String text = content.toString();
        ObjectNode logprobs = null;
        if (tokens != null) {
            // tokenized as a model would: the label value is one token, its alternatives the other labels
            logprobs = JSON.createObjectNode();
            ArrayNode list = logprobs.putArray("content");
            int at = text.indexOf("\"label\":\"") + "\"label\":\"".length();
            addToken(list, text.substring(0, at), -0.0001, null);
            addToken(list, label, Math.log(tokens.get(label)), tokens);
            addToken(list, text.substring(at + label.length()), -0.0001, null);
        }
        return completion(text, logprobs);
    }

    private static void addToken(ArrayNode list, String token, double logprob, Map<String, Double> alternatives) {
        ObjectNode entry = list.addObject().put("token", token).put("logprob", logprob);
        ArrayNode top = entry.putArray("top_logprobs");
        if (alternatives == null) {
            top.addObject().put("token", token).put("logprob", logprob);
        } else {
            alternatives.forEach((alternative, p) ->
                    top.addObject().put("token", alternative).put("logprob", Math.log(p)));
            top.addObject().put("token", "Maybe").put("logprob", Math.log(0.0001));
        }
    }

    private static ObjectNode completion(String content, ObjectNode logprobs) {
        ObjectNode reply = JSON.createObjectNode().put("id", "chatcmpl-standin").put("object", "chat.completion");
        ObjectNode choice =
                reply.putArray("choices").addObject().put("index", 0).put("finish_reason", "stop");
        choice.putObject("message")
                .put("role", "assistant")
                .put("content", content)
                .putNull("refusal");
        if (logprobs != null) {
            choice.set("logprobs", logprobs);
        }
        return reply;
    }

    private static void reply(HttpExchange exchange, ObjectNode body) throws IOException {
        send(exchange, 200, body.toString());
    }

    private static void error(HttpExchange exchange, int status, String message) throws IOException {
        ObjectNode body = JSON.createObjectNode();
        body.putObject("error").put("message", message).put("type", "stand_in_error");
        send(exchange, status, body.toString());
    }

    private static void send(HttpExchange exchange, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }
}
