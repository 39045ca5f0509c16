package ai.chalk.compute.server.egress;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Applies an allowed host's rules to one request, in place: of the rules whose {@code match} holds, placeholders are
 * replaced by their secrets inside header values (also inside a {@code Basic} credential, which carries them base64
 * encoded), then headers are set (a later rule wins), and the first {@code forward_url} sends the request elsewhere.
 * Nothing outside the headers changes: a placeholder in the path, the query or the body stays a placeholder. Secrets
 * go only over TLS: a request the rules would give one, bound for a plain {@code http://} destination, is refused
 * ({@link InTheClear}) rather than sent where anyone on its way could read the credential.
 */
final class RequestRewrite {

    private RequestRewrite() {}

    /**
     * Where a request goes.
     *
     * @param tls       whether over TLS
     * @param host      the host (a name or a literal)
     * @param port      the port
     * @param forwarded whether a rule's forward_url chose it
     */
    record Target(boolean tls, String host, int port, boolean forwarded) {
        String key() {
            return (tls ? "https://" : "http://") + host + ":" + port;
        }
    }

    /**
     * Why {@code rawPath} may mean another path to its destination: a {@code .} or {@code ..} segment, an encoded dot,
     * slash or backslash, a backslash, or a {@code ;} (path parameters, which some servers drop).
     */
    static Optional<String> ambiguity(String rawPath) {
        for (String segment : rawPath.split("/", -1)) {
            if (segment.equals(".") || segment.equals("..")) {
                return Optional.of("it has a '" + segment + "' segment");
            }
        }
        String lower = rawPath.toLowerCase(Locale.ROOT);
        for (String encoded : List.of("%2e", "%2f", "%5c")) {
            if (lower.contains(encoded)) {
                return Optional.of("it has " + encoded.toUpperCase(Locale.ROOT) + " in it");
            }
        }
        if (rawPath.indexOf('\\') >= 0 || rawPath.indexOf(';') >= 0) {
            return Optional.of("it has a " + (rawPath.indexOf(';') >= 0 ? "';'" : "backslash") + " in it");
        }
        return Optional.empty();
    }

    /** How long a request's rules may take to decide whether they match it: their regexes are the tenant's. */
    static final long MATCH_BUDGET_NANOS = 20_000_000;

    /**
     * Rewrites {@code request} (origin-form URI) by {@code rules}; returns where it must go, {@code original} unless a
     * forward_url says otherwise.
     *
     * @throws ai.chalk.compute.server.regex.DeadlineCharSequence.DeadlineExceeded when the rules' regexes took longer
     *     than {@link #MATCH_BUDGET_NANOS} on it
     * @throws InTheClear when the rules would put a secret into the request and it would leave the proxy unencrypted
     */
    static Target apply(HttpRequest request, List<HttpRule> rules, Target original) {
        if (rules.isEmpty()) {
            return original;
        }
        // ';' is part of a value, as most servers read it (Netty's default splits there too, so that a=x;b=y matched
        // a rule on b that the server never saw)
        // every parameter, however many (the request line's length bounds them): one dropped past a count could be
        // the one a condition must see
        QueryStringDecoder uri =
                new QueryStringDecoder(request.uri(), StandardCharsets.UTF_8, true, Integer.MAX_VALUE, true);
        // a rule that looks at paths does not match a path the host may read as another (its credential is not
        // added; the request still goes, as to a path the rule does not cover)
        boolean ambiguous = ambiguity(uri.rawPath()).isPresent();
        List<Map.Entry<String, String>> query = new ArrayList<>();
        uri.parameters().forEach((k, vs) -> vs.forEach(v -> query.add(Map.entry(k, v))));
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        request.headers().forEach(h -> headers.add(Map.entry(h.getKey().toLowerCase(Locale.ROOT), h.getValue())));
        // one deadline for all of a request's matches: it runs on a thread of the proxy, which every sandbox shares
        long deadline = System.nanoTime() + MATCH_BUDGET_NANOS;
        List<HttpRule> matching = rules.stream()
                .filter(r -> !(ambiguous && r.match().path().isPresent()))
                .filter(r -> r.match().matches(request.method().name(), uri.rawPath(), query, headers, deadline))
                .toList();
        Map<String, String> placeholders = new LinkedHashMap<>();
        matching.forEach(r -> r.placeholders().forEach((p, v) -> placeholders.put(p, v.value())));
        List<Map.Entry<String, String>> substituted = placeholders.isEmpty() ? null : substitute(request, placeholders);
        boolean setsHeaders = matching.stream().anyMatch(r -> !r.setHeaders().isEmpty());
        Optional<URI> forward = matching.stream()
                .map(HttpRule::forwardUrl)
                .flatMap(Optional::stream)
                .findFirst();
        Target to = forward.map(RequestRewrite::target).orElse(original);
        if ((substituted != null || setsHeaders) && !to.tls()) {
            throw new InTheClear(to);
        }
        if (substituted != null) {
            request.headers().clear();
            substituted.forEach(h -> request.headers().add(h.getKey(), h.getValue()));
        }
        for (HttpRule r : matching) {
            r.setHeaders().forEach((name, value) -> request.headers().set(name, value.value()));
        }
        if (forward.isEmpty()) {
            return original;
        }
        String prefix = forward.get().getRawPath() == null ? "" : forward.get().getRawPath();
        if (prefix.endsWith("/")) {
            prefix = prefix.substring(0, prefix.length() - 1);
        }
        request.setUri(prefix + request.uri());
        request.headers().set(HttpHeaderNames.HOST, hostHeader(to.host(), to.port(), to.tls()));
        return to;
    }

    /** Where a rule's {@code forward_url} sends a request. */
    private static Target target(URI forward) {
        boolean tls = "https".equals(forward.getScheme());
        int port = forward.getPort() > 0 ? forward.getPort() : tls ? 443 : 80;
        String host = forward.getHost();
        return new Target(tls, host.startsWith("[") ? host.substring(1, host.length() - 1) : host, port, true);
    }

    /**
     * The rules would put a secret (a credential in place of its placeholder, a header's value: the sandbox sees
     * neither, so both count as secret) into a request that leaves the proxy unencrypted, where anyone on its way could
     * read it: it is refused, never sent.
     */
    static final class InTheClear extends RuntimeException {

        private final transient Target target;

        InTheClear(Target target) {
            super(null, null, false, false);
            this.target = target;
        }

        /** Why, in the words of the sandbox's refusal. */
        String reason() {
            return "the network policy adds a credential or a header of its rules to this request, which would go to "
                    + target.key() + " unencrypted: what the policy adds is only sent over TLS (use https://)";
        }
    }

    /** {@code host}, or {@code host:port} when the port is not the scheme's own; IPv6 literals in brackets. */
    static String hostHeader(String host, int port, boolean tls) {
        String h = host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
        return port == (tls ? 443 : 80) ? h : h + ":" + port;
    }

    /** The request's headers with the placeholders replaced; null when none of them holds one. */
    private static List<Map.Entry<String, String>> substitute(HttpRequest request, Map<String, String> placeholders) {
        List<Map.Entry<String, String>> all = new ArrayList<>();
        request.headers().forEach(all::add);
        boolean changed = false;
        List<Map.Entry<String, String>> next = new ArrayList<>();
        for (Map.Entry<String, String> h : all) {
            String v = replace(h.getValue(), placeholders);
            if (h.getKey().equalsIgnoreCase("authorization") && v.regionMatches(true, 0, "Basic ", 0, 6)) {
                v = basic(v, placeholders);
            }
            changed |= !v.equals(h.getValue());
            next.add(Map.entry(h.getKey(), v));
        }
        return changed ? next : null;
    }

    private static String replace(String value, Map<String, String> placeholders) {
        String v = value;
        for (Map.Entry<String, String> p : placeholders.entrySet()) {
            if (v.contains(p.getKey())) {
                v = v.replace(p.getKey(), p.getValue());
            }
        }
        return v;
    }

    private static String basic(String value, Map<String, String> placeholders) {
        String encoded = value.substring(6).strip();
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(encoded), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return value;
        }
        String replaced = replace(decoded, placeholders);
        return replaced.equals(decoded)
                ? value
                : "Basic " + Base64.getEncoder().encodeToString(replaced.getBytes(StandardCharsets.UTF_8));
    }
}
