package ai.chalk.compute.server.ai;

import ai.chalk.compute.proto.ai.v1.AiRouterServiceGrpc;
import ai.chalk.compute.proto.ai.v1.ForwardRequest;
import ai.chalk.compute.proto.ai.v1.ForwardResponse;
import ai.chalk.compute.server.outbound.BoundedAnswer;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code chalk_compute.ai.v1.AiRouterService}: forwards a caller's OpenAI-compatible request body, as given, to the
 * configured provider with the provider's key, and returns the provider's status and body. The caller is whoever the
 * server's authentication let in (an application's or a workload's token); the key never leaves the server, and
 * anything in a reply that repeats it is masked. Without {@code --ai-endpoint} every call is FAILED_PRECONDITION
 * saying how to configure one.
 */
public final class AiRouterServiceV1 extends AiRouterServiceGrpc.AiRouterServiceImplBase {

    private static final Logger log = LoggerFactory.getLogger(AiRouterServiceV1.class);
    private static final Set<String> PATHS = Set.of("chat/completions", "embeddings");

    /**
     * The most of a provider's answer the router reads: a completion or a batch of embeddings is far less, and every
     * caller with a token (a workload's too) may ask, each answer held whole in the server's heap.
     */
    static final int MAX_ANSWER_BYTES = 16 << 20;

    /** How long a provider has to answer, and then to send its answer's body. */
    private static final Duration TIMEOUT = Duration.ofMinutes(5);

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private final @Nullable AiRouterOptions options;

    /**
     * The router.
     *
     * @param options where to forward, or null when the server has no provider
     */
    public AiRouterServiceV1(@Nullable AiRouterOptions options) {
        this.options = options;
    }

    @Override
    public void forward(ForwardRequest request, StreamObserver<ForwardResponse> observer) {
        if (options == null) {
            observer.onError(Status.FAILED_PRECONDITION
                    .withDescription("this server has no AI router: start it with --ai-endpoint URL (an "
                            + "OpenAI-compatible base URL) and --ai-api-key-file FILE, or give the judge its own "
                            + "apiKey and baseUrl")
                    .asRuntimeException());
            return;
        }
        if (!PATHS.contains(request.getPath())) {
            observer.onError(Status.INVALID_ARGUMENT
                    .withDescription("the AI router forwards " + PATHS + ", not '" + request.getPath() + "'")
                    .asRuntimeException());
            return;
        }
        String key;
        try {
            key = options.apiKeyFile() == null
                    ? null
                    : Files.readString(options.apiKeyFile(), StandardCharsets.UTF_8)
                            .strip();
        } catch (IOException e) {
            log.warn(
                    "The AI router cannot read its key file {}: {}",
                    options.apiKeyFile(),
                    e.getClass().getName());
            observer.onError(Status.UNAVAILABLE
                    .withDescription("the AI router cannot read its provider key; the server's log says why")
                    .asRuntimeException());
            return;
        }
        URI base =
                options.endpoint().toString().endsWith("/") ? options.endpoint() : URI.create(options.endpoint() + "/");
        HttpRequest.Builder http = HttpRequest.newBuilder(base.resolve(request.getPath()))
                .timeout(TIMEOUT)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(request.getBody().toByteArray()));
        if (key != null && !key.isEmpty()) {
            http.header("Authorization", "Bearer " + key);
        }
        BoundedAnswer response;
        byte[] body;
        try {
            response = BoundedAnswer.send(HTTP, http.build(), MAX_ANSWER_BYTES, TIMEOUT);
            body = response.body();
        } catch (IOException e) {
            observer.onError(Status.UNAVAILABLE
                    .withDescription("the AI router could not reach its provider " + base + ": "
                            + e.getClass().getSimpleName())
                    .asRuntimeException());
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            observer.onError(Status.CANCELLED.withDescription("interrupted").asRuntimeException());
            return;
        }
        if (response.tooLarge()) {
            observer.onError(Status.RESOURCE_EXHAUSTED
                    .withDescription("the AI provider's answer is larger than " + (MAX_ANSWER_BYTES >> 20)
                            + " MiB, the most the router passes on")
                    .asRuntimeException());
            return;
        }
        if (key != null && !key.isEmpty()) {
            String text = new String(body, StandardCharsets.UTF_8);
            if (text.contains(key)) {
                body = text.replace(key, "***").getBytes(StandardCharsets.UTF_8);
            }
        }
        ForwardResponse.Builder reply =
                ForwardResponse.newBuilder().setStatus(response.status()).setBody(ByteString.copyFrom(body));
        response.headers().firstValue("Retry-After").ifPresent(reply::setRetryAfter);
        observer.onNext(reply.build());
        observer.onCompleted();
    }
}
