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

    private static final Logger log = LoggerFactory.getLogger(ChatCompletions.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private static final int RETRIES = 2;
    private static final Duration FIRST_BACKOFF = Duration.ofMillis(500);
    private static final Duration LONGEST_RETRY_AFTER = Duration.ofMinutes(1);

    private final URI endpoint;
    private final @Nullable String apiKey;

    ChatCompletions(String baseUrl, @Nullable String apiKey) {
        URI base = URI.create(baseUrl.endsWith("/") ? baseUrl : baseUrl + "/");
        if (!"http".equals(base.getScheme()) && !"https".equals(base.getScheme())) {
            throw new IllegalArgumentException("a judge's baseUrl is an http or https URL, not " + baseUrl);
        }
        this.endpoint = base.resolve("chat/completions");
        this.apiKey = apiKey == null || apiKey.isEmpty() ? null : apiKey;
    }

    /** The first choice's message of a completion. */
    JsonNode complete(ObjectNode request) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(endpoint)
                .timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(request.toString()));
        if (apiKey != null) {
            builder.header("Authorization", "Bearer " + apiKey);
        }
        HttpRequest http = builder.build();
        String model = request.path("model").asText();
        for (int attempt = 0; ; attempt++) {
            HttpResponse<String> response;
            try {
                response = HTTP.send(http, HttpResponse.BodyHandlers.ofString());
            } catch (IOException e) {
                if (attempt < RETRIES) {
                    sleep(
                            backoff(attempt, null),
                            model,
                            "could not be reached (" + e.getClass().getSimpleName() + ")");
                    continue;
                }
                throw new JudgeException(
                        Status.Code.UNAVAILABLE,
                        "the judge's endpoint " + endpoint + " could not be reached: " + mask(String.valueOf(e)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new JudgeException(Status.Code.CANCELLED, "interrupted while waiting for the judge's model");
            }
            int status = response.statusCode();
            if (status == 200) {
                return message(response.body(), model);
            }
            boolean retryable = status == 408 || status == 409 || status == 429 || status >= 500;
            if (retryable && attempt < RETRIES) {
                sleep(
                        backoff(
                                attempt,
                                response.headers().firstValue("Retry-After").orElse(null)),
                        model,
                        "answered HTTP " + status);
                continue;
            }
            throw new JudgeException(
                    Status.Code.UNAVAILABLE,
                    "the judge's endpoint " + endpoint + " answered HTTP "
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
                    Status.Code.UNAVAILABLE,
                    "the judge's endpoint " + endpoint + " answered model " + model + " with a body that is not JSON");
        }
        JsonNode choice = reply == null ? null : reply.path("choices").path(0);
        if (choice == null || !choice.path("message").isObject()) {
            throw new JudgeException(
                    Status.Code.UNAVAILABLE,
                    "the judge's endpoint " + endpoint + " answered model " + model + " without choices[0].message");
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
        log.info("judge request for model {} to {} {}; retrying in {} ms", model, endpoint, why, delay.toMillis());
        try {
            Thread.sleep(delay.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new JudgeException(Status.Code.CANCELLED, "interrupted while waiting to retry the judge's model");
        }
    }
}
