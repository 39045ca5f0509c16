package ai.chalk.compute.server.egress;

import java.util.Objects;

/**
 * A value the proxy puts into requests that the sandbox must never see: a secret's value. It never prints: its
 * {@code toString} says only that it is hidden, so a policy can reach logs and messages safely.
 *
 * @param value the value
 */
public record SecretText(String value) {

    public SecretText {
        Objects.requireNonNull(value, "value");
    }

    @Override
    public String toString() {
        return "(hidden)";
    }
}
