package ai.chalk.compute.network;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * What a sandbox, scaling group or function may reach on the network. Without a policy a workload has no network at
 * all (its own loopback only); with one, its only way out is the server's egress proxy, which lets through:
 * <ul>
 *   <li>hosts by name ({@link #allowHosts}): exact names, or {@code *.example.com} for every name below
 *       {@code example.com} (not {@code example.com} itself). HTTPS to a host without rules passes untouched once the
 *       TLS handshake names that host; a host with {@link #rule rules} is decrypted by the proxy (the workload trusts the
 *       proxy's CA: {@code SSL_CERT_FILE}, {@code REQUESTS_CA_BUNDLE}, {@code NODE_EXTRA_CA_CERTS} and a Java trust
 *       store are set for it) so that headers can be set from secrets;</li>
 *   <li>addresses by prefix and port ({@link #allowRoutes}, {@link #allowRoute}), through the proxy's CONNECT;</li>
 *   <li>never the prefixes {@link #deny denied}, whatever allowed them.</li>
 * </ul>
 * Clients that honour {@code HTTP_PROXY}/{@code HTTPS_PROXY} (set for the workload) use the proxy; others still reach
 * allowed names on ports 80 and 443, which resolve to the proxy. Everything else fails at once: other hosts
 * (HTTP 403 naming the policy through the proxy, a closed connection otherwise), direct connections to any address,
 * UDP, raw sockets, IPv6, and the names of hosts the policy does not allow (they do not resolve).
 * <pre>{@code
 * Sandbox.builder()
 *         .network(NetworkPolicy.allowlist("pypi.org", "*.pythonhosted.org").deny("10.0.0.0/8"))
 *         .addCredentials("api.openai.com", "OPENAI_API_KEY")
 *         .build();
 * }</pre>
 *
 * <p>code_sandboxes' {@code network_policy} values map onto it: {@code "inherit"} is no call to {@code network(...)}
 * (the server's default: no network); {@code "none"} is {@link #none()}; {@code "allowlist"} with
 * {@code allowed_hosts} is {@link #allowlist(String...)}; {@code "all"} is {@link #all()}.
 *
 * <p>An immutable value: each method returns a new policy. Its {@code toString} names hosts, routes and header names,
 * never a value.
 */
public final class NetworkPolicy {

    private static final Pattern HOST =
            Pattern.compile("(\\*\\.)?[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*\\.?|[0-9a-fA-F:.]+");
    private static final Pattern CIDR = Pattern.compile("[0-9a-fA-F:.]+(/[0-9]{1,3})?");

    private final Map<String, List<NetworkRule>> hosts;
    private final List<Route> routes;
    private final List<String> denied;

    /**
     * An allowed route.
     *
     * @param cidr  the prefix, such as {@code "10.1.0.0/16"}, {@code "2001:db8::/32"} or one address
     * @param ports the ports as {@code [start, end]} ranges, both included; empty for every port
     */
    public record Route(String cidr, List<int[]> ports) {
        /** Checks the prefix and the ranges and copies the list. */
        public Route {
            checkCidr(cidr);
            ports = ports.stream().map(int[]::clone).toList();
            for (int[] r : ports) {
                if (r.length != 2 || r[0] < 1 || r[1] > 65535 || r[1] < r[0]) {
                    throw new IllegalArgumentException("a port range of " + cidr + " is not within 1-65535");
                }
            }
        }

        @Override
        public String toString() {
            return ports.isEmpty()
                    ? cidr
                    : cidr + " ports "
                            + ports.stream()
                                    .map(r -> r[0] == r[1] ? "" + r[0] : r[0] + "-" + r[1])
                                    .toList();
        }
    }

    private NetworkPolicy(Map<String, List<NetworkRule>> hosts, List<Route> routes, List<String> denied) {
        Map<String, List<NetworkRule>> h = new LinkedHashMap<>();
        hosts.forEach((k, v) -> h.put(k, List.copyOf(v)));
        this.hosts = Collections.unmodifiableMap(h);
        this.routes = List.copyOf(routes);
        this.denied = List.copyOf(denied);
    }

    /**
     * No network: the workload's own loopback only (also what a workload without a policy gets).
     *
     * @return the policy
     */
    public static NetworkPolicy none() {
        return new NetworkPolicy(Map.of(), List.of(), List.of());
    }

    /**
     * The whole network ({@code allowed_routes ["0.0.0.0/0"]}), the server's own host and cloud metadata excepted:
     * every protocol, without the proxy (unless hosts, rules or denied routes are added, which need it).
     *
     * @return the policy
     */
    public static NetworkPolicy all() {
        return none().allowRoutes("0.0.0.0/0");
    }

    /**
     * Only {@code hosts}; code_sandboxes' {@code "allowlist"}.
     *
     * @param hosts exact names or {@code *.} wildcards
     * @return the policy
     */
    public static NetworkPolicy allowlist(String... hosts) {
        return none().allowHosts(hosts);
    }

    /**
     * This policy, and {@code hosts} allowed.
     *
     * @param hosts exact names, such as {@code "api.openai.com"}, or wildcards, such as {@code "*.slack.com"}
     * @return the new policy
     */
    public NetworkPolicy allowHosts(String... hosts) {
        return allowHosts(List.of(hosts));
    }

    /**
     * This policy, and {@code hosts} allowed.
     *
     * @param hosts exact names or {@code *.} wildcards
     * @return the new policy
     */
    public NetworkPolicy allowHosts(Collection<String> hosts) {
        Map<String, List<NetworkRule>> h = new LinkedHashMap<>(this.hosts);
        for (String host : hosts) {
            checkHost(host);
            h.putIfAbsent(host, List.of());
        }
        return new NetworkPolicy(h, routes, denied);
    }

    /**
     * This policy, and the addresses of {@code cidrs} allowed on every port.
     *
     * @param cidrs prefixes, such as {@code "10.1.0.0/16"}, or single addresses
     * @return the new policy
     */
    public NetworkPolicy allowRoutes(String... cidrs) {
        List<Route> r = new ArrayList<>(routes);
        for (String c : cidrs) {
            r.add(new Route(c, List.of()));
        }
        return new NetworkPolicy(hosts, r, denied);
    }

    /**
     * This policy, and the addresses of {@code cidr} allowed on ports {@code startPort} to {@code endPort}.
     *
     * @param cidr      a prefix or one address
     * @param startPort the first port
     * @param endPort   the last port
     * @return the new policy
     */
    public NetworkPolicy allowRoute(String cidr, int startPort, int endPort) {
        List<Route> r = new ArrayList<>(routes);
        r.add(new Route(cidr, List.<int[]>of(new int[] {startPort, endPort})));
        return new NetworkPolicy(hosts, r, denied);
    }

    /**
     * This policy, and the addresses of {@code cidrs} never reached, whatever host or route allowed them.
     *
     * @param cidrs prefixes or single addresses
     * @return the new policy
     */
    public NetworkPolicy deny(String... cidrs) {
        List<String> d = new ArrayList<>(denied);
        for (String c : cidrs) {
            checkCidr(c);
            d.add(c);
        }
        return new NetworkPolicy(hosts, routes, d);
    }

    /**
     * This policy, with {@code host} allowed and a rule for its requests.
     *
     * @param host an exact name or a {@code *.} wildcard
     * @param rule what the proxy does to its requests
     * @return the new policy
     */
    public NetworkPolicy rule(String host, NetworkRule rule) {
        checkHost(host);
        Objects.requireNonNull(rule, "rule");
        Map<String, List<NetworkRule>> h = new LinkedHashMap<>(this.hosts);
        List<NetworkRule> rules = new ArrayList<>(h.getOrDefault(host, List.of()));
        rules.add(rule);
        h.put(host, rules);
        return new NetworkPolicy(h, routes, denied);
    }

    /**
     * The allowed hosts, each with its rules, in the order added.
     *
     * @return host to rules
     */
    public Map<String, List<NetworkRule>> hosts() {
        return hosts;
    }

    /**
     * The allowed routes.
     *
     * @return the routes
     */
    public List<Route> routes() {
        return routes;
    }

    /**
     * The denied prefixes.
     *
     * @return the prefixes
     */
    public List<String> denied() {
        return denied;
    }

    static void checkHost(String host) {
        if (host == null || !HOST.matcher(host).matches() || host.length() > 253) {
            throw new IllegalArgumentException("\"" + host + "\" is not a host name or a *. wildcard such as"
                    + " *.example.com (a '*' is allowed only as the whole first label)");
        }
    }

    static void checkCidr(String cidr) {
        if (cidr == null || !CIDR.matcher(cidr).matches()) {
            throw new IllegalArgumentException(
                    "\"" + cidr + "\" is not an IP address or prefix such as 10.0.0.0/8 or 2001:db8::/32");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof NetworkPolicy p
                && p.hosts.equals(hosts)
                && p.routes.toString().equals(routes.toString())
                && p.denied.equals(denied);
    }

    @Override
    public int hashCode() {
        return Objects.hash(hosts, routes.toString(), denied);
    }

    @Override
    public String toString() {
        if (hosts.isEmpty() && routes.isEmpty()) {
            return "NetworkPolicy[none]";
        }
        return "NetworkPolicy[hosts=" + hosts + ", routes=" + routes + ", denied=" + denied + "]";
    }
}
