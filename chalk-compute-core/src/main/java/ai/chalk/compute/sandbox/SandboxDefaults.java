package ai.chalk.compute.sandbox;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Settings every sandbox a client creates receives unless its definition sets its own: a lifetime, so that a
 * forgotten sandbox does not run until the server's maximum, and tags, so that an application's sandboxes can be
 * listed with {@link ListOptions#tag(String, String)}. A definition's own tag of the same key wins.
 *
 * <pre>{@code
 * SandboxClient client = SandboxClient.fromEnv()
 *         .withSandboxDefaults(SandboxDefaults.none().lifetime(Duration.ofMinutes(30)).tag("app", "agent"));
 * }</pre>
 *
 * <p>In Spring Boot: {@code chalk.compute.sandbox.default-lifetime} and {@code chalk.compute.sandbox.default-tags.*}.
 * A sandbox started from a snapshot keeps the snapshot's settings and receives neither.
 *
 * @param lifetime the lifetime of sandboxes that set none, or empty for the server's maximum
 * @param tags     tags every sandbox receives, unless it sets the same key itself
 */
public record SandboxDefaults(Optional<Duration> lifetime, Map<String, String> tags) {

    private static final SandboxDefaults NONE = new SandboxDefaults(Optional.empty(), Map.of());

    /** Checks the values and copies the tags. */
    public SandboxDefaults {
        Objects.requireNonNull(lifetime, "lifetime");
        lifetime.ifPresent(l -> {
            if (l.isNegative() || l.isZero()) {
                throw new IllegalArgumentException("a default lifetime must be positive, got " + l);
            }
        });
        tags.forEach((k, v) -> {
            if (k == null || k.isBlank()) {
                throw new IllegalArgumentException("a default tag key must not be blank");
            }
            Objects.requireNonNull(v, () -> "value of default tag " + k);
        });
        tags = Collections.unmodifiableMap(new LinkedHashMap<>(tags));
    }

    /**
     * No defaults: sandboxes get only what their definition says.
     *
     * @return the empty defaults
     */
    public static SandboxDefaults none() {
        return NONE;
    }

    /**
     * These defaults with a lifetime for sandboxes that set none.
     *
     * @param lifetime a positive duration
     * @return the new defaults
     */
    public SandboxDefaults lifetime(Duration lifetime) {
        return new SandboxDefaults(Optional.of(Objects.requireNonNull(lifetime, "lifetime")), tags);
    }

    /**
     * These defaults with one more tag.
     *
     * @param key   the tag's key, not blank
     * @param value its value
     * @return the new defaults
     */
    public SandboxDefaults tag(String key, String value) {
        Map<String, String> more = new LinkedHashMap<>(tags);
        more.put(Objects.requireNonNull(key, "tag key"), Objects.requireNonNull(value, () -> "value of tag " + key));
        return new SandboxDefaults(lifetime, more);
    }

    /**
     * These defaults with more tags.
     *
     * @param tags keys and values
     * @return the new defaults
     */
    public SandboxDefaults tags(Map<String, String> tags) {
        Map<String, String> more = new LinkedHashMap<>(this.tags);
        more.putAll(tags);
        return new SandboxDefaults(lifetime, more);
    }

    /** Whether there is nothing to apply. */
    boolean isEmpty() {
        return lifetime.isEmpty() && tags.isEmpty();
    }
}
