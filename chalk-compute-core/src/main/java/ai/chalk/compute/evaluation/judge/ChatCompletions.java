package ai.chalk.compute.evaluation.judge;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Status;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /chat/completions} on an OpenAI-compatible endpoint, with the retries OpenAI's own clients make: on
 * 408, 409, 429 and 5xx, twice, after the server's {@code Retry-After} (up to a minute) or an exponential backoff.
 * The JDK's HTTP client and Jackson suffice, and unlike a typed client they pass completion options exactly as given
 * and keep the schema's ranges and the token log-probabilities. The API key goes only into the Authorization header
 * and is masked in every message built from a reply.
 */
final class ChatCompletions {

    /** One provider answer: its HTTP status, body and Retry-After header. */
    record Reply(int status, String body, @Nullable String retryAfter) {}

    /** How a request body reaches the provider: over HTTP, or through the server's AI router. */
    interface Transport {
        Reply send(byte[] body) throws IOException, InterruptedException;

        /** Where requests go, for messages. */
        String describe();
    }

    private static final Logger log = LoggerFactory.getLogger(ChatCompletions.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private static final int RETRIES = 2;
    private static final Duration FIRST_BACKOFF = Duration.ofMillis(500);
    private static final Duration LONGEST_RETRY_AFTER = Duration.ofMinutes(1);

    private final Transport transport;
    private final String endpoint;
    private final @Nullable String apiKey;

    /** Requests over HTTP to {@code baseUrl}/chat/completions with this key. */
    ChatCompletions(String baseUrl, @Nullable String apiKey) {
        this(
                http(endpoint(baseUrl), apiKey == null || apiKey.isEmpty() ? null : apiKey),
                apiKey == null || apiKey.isEmpty() ? null : apiKey);
    }

    /** Requests through another transport, such as the server's AI router, which holds the key. */
    ChatCompletions(Transport transport) {
        this(transport, null);
    }

    private ChatCompletions(Transport transport, @Nullable String apiKey) {
        this.transport = transport;
        this.endpoint = transport.describe();
        this.apiKey = apiKey;
    }

    static URI endpoint(String baseUrl) {
        URI base = URI.create(baseUrl.endsWith("/") ? baseUrl : baseUrl + "/");
        if (!"http".equals(base.getScheme()) && !"https".equals(base.getScheme())) {
            throw new IllegalArgumentException("a judge's baseUrl is an http or https URL, not " + baseUrl);
        }
        return base.resolve("chat/completions");
    }

    private static Transport http(URI endpoint, @Nullable String apiKey) {
        return new Transport() {
            @Override
            public Reply send(byte[] body) throws IOException, InterruptedException {
                HttpRequest.Builder builder = HttpRequest.newBuilder(endpoint)
                        .timeout(Duration.ofMinutes(5))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(body));
                if (apiKey != null) {
                    builder.header("Authorization", "Bearer " + apiKey);
                }
                HttpResponse<String> response = HTTP.send(builder.build(), HttpResponse.BodyHandlers.ofString());
                return new Reply(
                        response.statusCode(),
                        response.body(),
                        response.headers().firstValue("Retry-After").orElse(null));
            }

            @Override
            public String describe() {
                return "the judge's endpoint " + endpoint;
            }
        };
    }

    /** The first choice's message of a completion. */
    JsonNode complete(ObjectNode request) {
        byte[] body = request.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        String model = request.path("model").asText();
        for (int attempt = 0; ; attempt++) {
            Reply response;
            try {
                response = transport.send(body);
            } catch (IOException e) {
                if (attempt < RETRIES) {
                    sleep(
                            backoff(attempt, null),
                            model,
                            "could not be reached (" + e.getClass().getSimpleName() + ")");
                    continue;
                }
                throw new JudgeException(
                        Status.Code.UNAVAILABLE, endpoint + " could not be reached: " + mask(String.valueOf(e)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new JudgeException(Status.Code.CANCELLED, "interrupted while waiting for the judge's model");
            }
            int status = response.status();
            if (status == 200) {
                return message(response.body(), model);
            }
            boolean retryable = status == 408 || status == 409 || status == 429 || status >= 500;
            if (retryable && attempt < RETRIES) {
                sleep(backoff(attempt, response.retryAfter()), model, "answered HTTP " + status);
                continue;
            }
            throw new JudgeException(
                    Status.Code.UNAVAILABLE,
                    endpoint + " answered HTTP "
                            + status + (retryable ? " after " + (RETRIES + 1) + " attempts" : "") + " for model "
                            + model
                            + errorDetail(response.body()));
        }
    }

    private JsonNode message(String body, String model) {
        JsonNode reply;
        try {
            reply = JSON.readTree(body);
        } catch (JsonProcessingException e) {
            throw new JudgeException(
                    Status.Code.UNAVAILABLE, endpoint + " answered model " + model + " with a body that is not JSON");
        }
        JsonNode choice = reply == null ? null : reply.path("choices").path(0);
        if (choice == null || !choice.path("message").isObject()) {
            throw new JudgeException(
                    Status.Code.UNAVAILABLE, endpoint + " answered model " + model + " without choices[0].message");
        }
        JsonNode refusal = choice.path("message").path("refusal");
        if (refusal.isTextual() && !refusal.asText().isEmpty()) {
            throw new JudgeException(
                    Status.Code.INVALID_ARGUMENT, "model " + model + " refused to grade: " + mask(refusal.asText()));
        }
        return choice;
    }

    private String errorDetail(String body) {
        try {
            JsonNode message = JSON.readTree(body).path("error").path("message");
            if (message.isTextual()) {
                String text = mask(message.asText());
                return ": " + (text.length() > 300 ? text.substring(0, 300) + "..." : text);
            }
        } catch (JsonProcessingException | RuntimeException e) {
            // a body that is not an OpenAI error object adds nothing the status does not say
        }
        return "";
    }

    /** Replaces the API key wherever an endpoint echoed it. */
    String mask(String text) {
        return apiKey == null ? text : text.replace(apiKey, "***");
    }

    private static Duration backoff(int attempt, @Nullable String retryAfter) {
        if (retryAfter != null) {
            try {
                Duration wanted = Duration.ofMillis((long) (Double.parseDouble(retryAfter.strip()) * 1000));
                if (!wanted.isNegative() && wanted.compareTo(LONGEST_RETRY_AFTER) <= 0) {
                    return wanted;
                }
            } catch (NumberFormatException e) {
                // an HTTP date or nonsense: fall back to the backoff
            }
        }
        return FIRST_BACKOFF.multipliedBy(1L << attempt);
    }

    private void sleep(Duration delay, String model, String why) {
        log.info(
                "judge request for model {} to {} {}; retrying in {} ms",
                model,
                endpoint.replaceFirst("^the judge's ", ""),
                why,
                delay.toMillis());
        try {
            Thread.sleep(delay.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new JudgeException(Status.Code.CANCELLED, "interrupted while waiting to retry the judge's model");
        }
    }
}
