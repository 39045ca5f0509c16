package ai.chalk.compute.auth;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * A bearer token for Chalk's services and the environment it acts in.
 *
 * <p>{@link #toString()} never shows the token itself.
 *
 * @param value       the token, sent as {@code authorization: Bearer <value>}
 * @param environment the environment to act in, sent as {@code x-chalk-env-id}, if one is chosen
 * @param expiresAt   when the token stops being valid, if known
 */
public record AccessToken(String value, Optional<String> environment, Optional<Instant> expiresAt) {

    /**
     * Validates the components.
     *
     * @param value       the token, not blank
     * @param environment the environment to act in, if one is chosen
     * @param expiresAt   when the token stops being valid, if known
     */
    public AccessToken {
        Objects.requireNonNull(value, "value");
        if (value.isBlank()) {
            throw new IllegalArgumentException("an access token must not be blank");
        }
        Objects.requireNonNull(environment, "environment");
        Objects.requireNonNull(expiresAt, "expiresAt");
    }

    /** Shows the environment and expiry, never the token. */
    @Override
    public String toString() {
        return "AccessToken[value=****"
                + environment.map(e -> ", environment=" + e).orElse("")
                + expiresAt.map(e -> ", expiresAt=" + e).orElse("") + "]";
    }
}
