package ai.chalk.compute.secret;

import java.time.Instant;
import java.util.Objects;

/**
 * A managed secret of the environment as {@link SecretsClient#list()} shows it: never its value.
 *
 * @param id        the server's id for it
 * @param name      its name, the environment variable it gives by default
 * @param updatedAt when its value was last set
 */
public record SecretInfo(String id, String name, Instant updatedAt) {

    /** Checks for nulls. */
    public SecretInfo {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(updatedAt, "updatedAt");
    }
}
