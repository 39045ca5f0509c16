package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.proto.container.v1.AllowedRoute;
import ai.chalk.compute.proto.container.v1.NetworkPolicy;
import ai.chalk.compute.proto.container.v1.NetworkPolicyKeyValueMatcher;
import ai.chalk.compute.proto.container.v1.NetworkPolicyMatch;
import ai.chalk.compute.proto.container.v1.NetworkPolicyMatcher;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRule;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRuleList;
import ai.chalk.compute.proto.container.v1.NetworkTransformer;
import ai.chalk.compute.proto.container.v1.PortRange;
import ai.chalk.compute.server.egress.EgressPolicy;
import ai.chalk.compute.server.egress.HostEntry;
import ai.chalk.compute.server.egress.HostPattern;
import ai.chalk.compute.server.egress.HttpRule;
import ai.chalk.compute.server.egress.RequestMatch;
import ai.chalk.compute.server.egress.Route;
import ai.chalk.compute.server.egress.SecretText;
import ai.chalk.compute.server.egress.TextMatcher;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.network.Prefix;
import ai.chalk.compute.server.secret.Secrets;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BiFunction;
import java.util.regex.Pattern;

/**
 * A {@code chalk.container.v1.NetworkPolicy} read into the {@link NetworkGrant} a workload gets: checked field by
 * field (INVALID_ARGUMENT naming the field), its {@code headers_secrets} resolved in the workload's environment (a
 * missing secret is NOT_FOUND naming it; values never appear in a message).
 *
 * <p>Credential placeholders (the SDK's {@code add_credentials}) travel in Chalk's own fields: a
 * {@code headers_secrets} entry whose key is {@value #PLACEHOLDER_PREFIX}{@code TEXT} (a key no header name can be:
 * ':' is not allowed in one) means "replace {@code TEXT} by this secret's value wherever it appears in a header of a
 * request to this host"; the sandbox's environment holds {@code TEXT}.
 */
public final class NetworkPolicies {

    /** The {@code headers_secrets} key prefix of a credential placeholder; the SDK writes the same. */
    public static final String PLACEHOLDER_PREFIX = "placeholder:";

    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");

    private NetworkPolicies() {}

    /**
     * The grant of {@code policy} ({@code null}: no policy).
     *
     * @param field   how messages name the policy, such as {@code network_policy} or
     *                {@code spec.container_spec.network_policy}
     * @param secrets resolves a name of {@code headers_secrets} to its value in the workload's environment
     */
    public static NetworkGrant grant(NetworkPolicy policy, String field, BiFunction<String, String, String> secrets) {
        if (policy == null || policy.getAllowedRoutesCount() == 0 && policy.getAllowedHostsCount() == 0) {
            return new NetworkGrant.None();
        }
        List<Route> routes = new ArrayList<>();
        for (int i = 0; i < policy.getAllowedRoutesCount(); i++) {
            routes.add(route(policy.getAllowedRoutes(i), field + ".allowed_routes[" + i + "]"));
        }
        List<Prefix> denied = new ArrayList<>();
        for (int i = 0; i < policy.getDeniedRoutesCount(); i++) {
            denied.add(prefix(policy.getDeniedRoutes(i), field + ".denied_routes[" + i + "]"));
        }
        // the whole network is IPv4 (slirp4netns, the engine's bridge): a policy of ::/0 alone is IPv6, which the
        // proxy serves, and not all of IPv4
        if (policy.getAllowedHostsCount() == 0
                && denied.isEmpty()
                && routes.stream().allMatch(Route::isEverything)
                && routes.stream().anyMatch(Route::isEveryIpv4Address)) {
            return new NetworkGrant.Whole();
        }
        List<HostEntry> hosts = new ArrayList<>();
        // sorted: the same policy always reads the same way, whatever order the map came in
        for (Map.Entry<String, NetworkPolicyRuleList> e : new TreeMap<>(policy.getAllowedHostsMap()).entrySet()) {
            String f = field + ".allowed_hosts[\"" + e.getKey() + "\"]";
            HostPattern pattern;
            try {
                pattern = HostPattern.of(e.getKey());
            } catch (IllegalArgumentException ex) {
                throw ComputeException.invalid(f + ": " + ex.getMessage());
            }
            List<HttpRule> rules = new ArrayList<>();
            for (int i = 0; i < e.getValue().getRulesCount(); i++) {
                rules.add(rule(e.getValue().getRules(i), f + ".rules[" + i + "]", secrets));
            }
            hosts.add(new HostEntry(pattern, rules));
        }
        return new NetworkGrant.Proxied(new EgressPolicy(hosts, routes, denied));
    }

    /** {@link #grant} with the secrets of {@code environment}. */
    public static NetworkGrant grant(NetworkPolicy policy, String field, Secrets secrets, String environment) {
        return grant(policy, field, (name, at) -> {
            try {
                return secrets.value(environment, name);
            } catch (ComputeException e) {
                throw ComputeException.notFound(at + " names the secret " + name + ", which environment " + environment
                        + " does not have: create it, or remove it from the policy");
            }
        });
    }

    private static Route route(AllowedRoute r, String field) {
        Prefix prefix = prefix(r.getRoute(), field + ".route");
        List<ai.chalk.compute.server.egress.PortRange> ports = new ArrayList<>();
        for (int i = 0; i < r.getPortRangesCount(); i++) {
            PortRange p = r.getPortRanges(i);
            try {
                ports.add(new ai.chalk.compute.server.egress.PortRange(p.getStartPort(), p.getEndPort()));
            } catch (IllegalArgumentException e) {
                throw ComputeException.invalid(field + ".port_ranges[" + i + "]: " + e.getMessage());
            }
        }
        return new Route(prefix, ports);
    }

    private static Prefix prefix(String cidr, String field) {
        try {
            return Prefix.parse(cidr.strip());
        } catch (IllegalArgumentException e) {
            throw ComputeException.invalid(
                    field + " \"" + cidr + "\" is not an IP address or prefix such as 10.0.0.0/8 or 2001:db8::/32");
        }
    }

    private static HttpRule rule(NetworkPolicyRule r, String field, BiFunction<String, String, String> secrets) {
        Map<String, SecretText> headers = new LinkedHashMap<>();
        Map<String, SecretText> placeholders = new LinkedHashMap<>();
        for (int t = 0; t < r.getTransformCount(); t++) {
            NetworkTransformer transform = r.getTransform(t);
            String f = field + ".transform[" + t + "]";
            for (Map.Entry<String, String> h : new TreeMap<>(transform.getHeadersMap()).entrySet()) {
                headers.put(
                        headerName(h.getKey(), f + ".headers"), headerValue(h.getValue(), f + ".headers", h.getKey()));
            }
            for (Map.Entry<String, String> h : new TreeMap<>(transform.getHeadersSecretsMap()).entrySet()) {
                String at = f + ".headers_secrets[\"" + h.getKey() + "\"]";
                if (h.getValue().isBlank()) {
                    throw ComputeException.invalid(at + " names no secret");
                }
                String value = secrets.apply(h.getValue(), at);
                if (h.getKey().startsWith(PLACEHOLDER_PREFIX)) {
                    String text = h.getKey().substring(PLACEHOLDER_PREFIX.length());
                    if (text.length() < 8) {
                        throw ComputeException.invalid(at + ": a credential placeholder must be at least 8 characters,"
                                + " so that it does not occur in headers by chance");
                    }
                    placeholders.put(text, headerValue(value, at, "the secret " + h.getValue()));
                } else {
                    headers.put(headerName(h.getKey(), at), headerValue(value, at, "the secret " + h.getValue()));
                }
            }
        }
        Optional<URI> forward = Optional.empty();
        if (r.hasForwardUrl() && !r.getForwardUrl().isBlank()) {
            try {
                URI u = new URI(r.getForwardUrl().strip());
                forward = Optional.of(u);
                new HttpRule(RequestMatch.ANY, Map.of(), Map.of(), forward); // checks it
            } catch (URISyntaxException | IllegalArgumentException e) {
                throw ComputeException.invalid(field + ".forward_url \"" + r.getForwardUrl()
                        + "\" is not an absolute http:// or https:// URL with a host");
            }
        }
        RequestMatch match = r.hasMatch() ? match(r.getMatch(), field + ".match") : RequestMatch.ANY;
        return new HttpRule(match, headers, placeholders, forward);
    }

    private static RequestMatch match(NetworkPolicyMatch m, String field) {
        Optional<TextMatcher> path =
                m.hasPath() ? Optional.of(matcher(m.getPath(), field + ".path")) : Optional.empty();
        for (String method : m.getMethodList()) {
            if (!TOKEN.matcher(method).matches()) {
                throw ComputeException.invalid(field + ".method \"" + method + "\" is not an HTTP method");
            }
        }
        List<RequestMatch.KeyValueMatch> query = new ArrayList<>();
        for (int i = 0; i < m.getQueryStringCount(); i++) {
            query.add(keyValue(m.getQueryString(i), field + ".query_string[" + i + "]", false));
        }
        List<RequestMatch.KeyValueMatch> headers = new ArrayList<>();
        for (int i = 0; i < m.getHeadersCount(); i++) {
            headers.add(keyValue(m.getHeaders(i), field + ".headers[" + i + "]", true));
        }
        return new RequestMatch(path, Set.copyOf(m.getMethodList()), query, headers);
    }

    private static RequestMatch.KeyValueMatch keyValue(NetworkPolicyKeyValueMatcher kv, String field, boolean header) {
        Optional<TextMatcher> key = kv.hasKey() ? Optional.of(matcher(kv.getKey(), field + ".key")) : Optional.empty();
        if (header && key.isPresent()) {
            // header names arrive in lower case: an exact or prefix name matches in any case
            key = Optional.of(caseless(key.get()));
        }
        Optional<TextMatcher> value =
                kv.hasValue() ? Optional.of(matcher(kv.getValue(), field + ".value")) : Optional.empty();
        return new RequestMatch.KeyValueMatch(key, value);
    }

    private static TextMatcher caseless(TextMatcher m) {
        if (m instanceof TextMatcher.Exact x) {
            return new TextMatcher.Exact(x.text().toLowerCase(java.util.Locale.ROOT));
        }
        if (m instanceof TextMatcher.StartsWith s) {
            return new TextMatcher.StartsWith(s.prefix().toLowerCase(java.util.Locale.ROOT));
        }
        TextMatcher.Regex r = (TextMatcher.Regex) m;
        return new TextMatcher.Regex(Pattern.compile(r.pattern().pattern(), Pattern.CASE_INSENSITIVE));
    }

    private static TextMatcher matcher(NetworkPolicyMatcher m, String field) {
        return switch (m.getMatcherCase()) {
            case EXACT -> new TextMatcher.Exact(m.getExact());
            case STARTS_WITH -> new TextMatcher.StartsWith(m.getStartsWith());
            case REGEX -> {
                try {
                    yield TextMatcher.Regex.of(field + ".regex", m.getRegex());
                } catch (IllegalArgumentException e) {
                    throw ComputeException.invalid(e.getMessage());
                }
            }
            case MATCHER_NOT_SET -> throw ComputeException.invalid(field + " sets none of exact, starts_with, regex");
        };
    }

    private static String headerName(String name, String field) {
        if (!TOKEN.matcher(name).matches()) {
            throw ComputeException.invalid(field + ": \"" + name + "\" is not an HTTP header name");
        }
        return name;
    }

    /** A header value as given, refused (without showing it) when HTTP cannot carry it. */
    private static SecretText headerValue(String value, String field, String what) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '\r' || c == '\n' || c == 0) {
                throw ComputeException.invalid(field + ": the value of " + what
                        + " contains a line break or NUL, which an HTTP header cannot carry");
            }
        }
        return new SecretText(value);
    }
}
