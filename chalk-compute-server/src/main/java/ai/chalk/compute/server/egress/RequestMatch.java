package ai.chalk.compute.server.egress;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Which requests a rule applies to ({@code NetworkPolicyMatch}): every condition given must hold; none given matches
 * every request.
 *
 * @param path    the path, without the query
 * @param methods the methods, any case; empty for all
 * @param query   each must match one parameter of the query string (a key and a value matcher; an absent one matches
 *                anything), and every parameter of a key it names
 * @param headers each must match one header (names compared in lower case)
 */
public record RequestMatch(
        Optional<TextMatcher> path, Set<String> methods, List<KeyValueMatch> query, List<KeyValueMatch> headers) {

    /** Matches every request. */
    public static final RequestMatch ANY = new RequestMatch(Optional.empty(), Set.of(), List.of(), List.of());

    public RequestMatch {
        methods = methods.stream().map(m -> m.toUpperCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
        query = List.copyOf(query);
        headers = List.copyOf(headers);
    }

    /**
     * A key matcher and a value matcher, either absent for "anything".
     *
     * @param key   the name
     * @param value the value
     */
    public record KeyValueMatch(Optional<TextMatcher> key, Optional<TextMatcher> value) {
        boolean matches(String k, String v, long deadlineNanos) {
            return key.map(m -> m.matches(k, deadlineNanos)).orElse(true)
                    && value.map(m -> m.matches(v, deadlineNanos)).orElse(true);
        }
    }

    /**
     * Whether a request matches.
     *
     * @param method  its method
     * @param path    its path without the query
     * @param query   its query parameters, decoded, in order
     * @param headers its headers, names in lower case, in order
     * @param deadlineNanos the {@link System#nanoTime()} by which its regexes must have decided
     * @throws ai.chalk.compute.server.regex.DeadlineCharSequence.DeadlineExceeded when they had not
     */
    public boolean matches(
            String method,
            String path,
            List<Map.Entry<String, String>> query,
            List<Map.Entry<String, String>> headers,
            long deadlineNanos) {
        if (!methods.isEmpty() && !methods.contains(method.toUpperCase(Locale.ROOT))) {
            return false;
        }
        if (this.path.isPresent() && !this.path.get().matches(path, deadlineNanos)) {
            return false;
        }
        for (KeyValueMatch q : this.query) {
            if (query.stream().noneMatch(e -> q.matches(e.getKey(), e.getValue(), deadlineNanos))) {
                return false;
            }
            // every parameter of the key, in any case, must match, not one: servers differ on which of
            // mode=readonly&mode=write they read, and on whether MODE is mode
            if (q.key().isPresent()
                    && query.stream()
                            .anyMatch(e -> (q.key().get().matches(e.getKey(), deadlineNanos)
                                            || q.key()
                                                    .get()
                                                    .matches(e.getKey().toLowerCase(Locale.ROOT), deadlineNanos))
                                    && !q.value()
                                            .map(m -> m.matches(e.getValue(), deadlineNanos))
                                            .orElse(true))) {
                return false;
            }
        }
        for (KeyValueMatch h : this.headers) {
            if (headers.stream().noneMatch(e -> h.matches(e.getKey(), e.getValue(), deadlineNanos))) {
                return false;
            }
        }
        return true;
    }
}
