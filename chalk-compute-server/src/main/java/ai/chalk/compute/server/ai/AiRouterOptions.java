package ai.chalk.compute.server.ai;

import java.net.URI;
import java.nio.file.Path;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Where the AI router forwards to: an OpenAI-compatible base URL ({@code https://api.openai.com/v1}) and the file
 * holding the provider's API key (read at each request, so a rotated key takes effect without a restart).
 *
 * @param endpoint   the provider's base URL, http or https
 * @param apiKeyFile the key file, or null for a provider that needs no key (a local model server)
 */
public record AiRouterOptions(URI endpoint, @Nullable Path apiKeyFile) {

    /** Checks the URL. */
    public AiRouterOptions {
        Objects.requireNonNull(endpoint, "endpoint");
        if (!"http".equals(endpoint.getScheme()) && !"https".equals(endpoint.getScheme())) {
            throw new IllegalArgumentException("--ai-endpoint must be an http or https URL, not " + endpoint);
        }
    }
}
