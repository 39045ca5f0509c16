package ai.chalk.compute.network;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Which requests to a host a {@link NetworkRule} applies to: every condition given must hold, and none given matches
 * every request. An immutable value; each {@code with…} returns a copy.
 * <pre>{@code
 * RequestMatch.pathStartsWith("/v1/").withMethods("POST").withHeader(TextMatch.exact("x-use-key"), TextMatch.exact("yes"))
 * }</pre>
 *
 * @param path    the path (without the query), or empty for any
 * @param methods the methods, upper case; empty for any
 * @param query   query parameters that must be present: a name match and a value match (empty for any) each
 * @param headers headers that must be present, the same way
 */
public record RequestMatch(
        Optional<TextMatch> path,
        List<String> methods,
        List<Map.Entry<Optional<TextMatch>, Optional<TextMatch>>> query,
        List<Map.Entry<Optional<TextMatch>, Optional<TextMatch>>> headers) {

    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");

    /** Checks the values and copies the lists. */
    public RequestMatch {
        Objects.requireNonNull(path, "path");
        methods = methods.stream()
                .map(m -> {
                    if (!TOKEN.matcher(m).matches()) {
                        throw new IllegalArgumentException("\"" + m + "\" is not an HTTP method");
                    }
                    return m.toUpperCase(Locale.ROOT);
                })
                .toList();
        query = List.copyOf(query);
        headers = List.copyOf(headers);
    }

    /**
     * Every request.
     *
     * @return the match
     */
    public static RequestMatch any() {
        return new RequestMatch(Optional.empty(), List.of(), List.of(), List.of());
    }

    /**
     * Requests whose path begins with {@code prefix}, such as {@code "/v1/"}.
     *
     * @param prefix the prefix
     * @return the match
     */
    public static RequestMatch pathStartsWith(String prefix) {
        return any().withPath(TextMatch.startsWith(prefix));
    }

    /**
     * This match, and the path matching {@code path}.
     *
     * @param path how the path must look
     * @return the new match
     */
    public RequestMatch withPath(TextMatch path) {
        return new RequestMatch(Optional.of(Objects.requireNonNull(path, "path")), methods, query, headers);
    }

    /**
     * This match, and the method one of {@code methods}.
     *
     * @param methods such as {@code "POST"}
     * @return the new match
     */
    public RequestMatch withMethods(String... methods) {
        return new RequestMatch(path, List.of(methods), query, headers);
    }

    /**
     * This match, and a query parameter whose name and value match.
     *
     * @param name  the parameter's name
     * @param value its value
     * @return the new match
     */
    public RequestMatch withQuery(TextMatch name, TextMatch value) {
        List<Map.Entry<Optional<TextMatch>, Optional<TextMatch>>> q = new ArrayList<>(query);
        q.add(Map.entry(Optional.of(name), Optional.of(value)));
        return new RequestMatch(path, methods, q, headers);
    }

    /**
     * This match, and a header whose name (in any case) and value match.
     *
     * @param name  the header's name
     * @param value its value
     * @return the new match
     */
    public RequestMatch withHeader(TextMatch name, TextMatch value) {
        List<Map.Entry<Optional<TextMatch>, Optional<TextMatch>>> h = new ArrayList<>(headers);
        h.add(Map.entry(Optional.of(name), Optional.of(value)));
        return new RequestMatch(path, methods, query, h);
    }

    /** Whether this matches every request. */
    boolean isAny() {
        return path.isEmpty() && methods.isEmpty() && query.isEmpty() && headers.isEmpty();
    }
}
