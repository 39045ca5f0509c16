package ai.chalk.compute.server.egress;

import ai.chalk.compute.server.runtime.network.Prefix;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Network policies for tests, written as the server holds them (secrets resolved). */
public final class Policies {

    private Policies() {}

    /** Hosts allowed, without rules. */
    public static EgressPolicy hosts(String... names) {
        List<HostEntry> entries = new ArrayList<>();
        for (String n : names) {
            entries.add(new HostEntry(HostPattern.of(n), List.of()));
        }
        return new EgressPolicy(entries, List.of(), List.of());
    }

    /** {@code policy} and one more host with rules. */
    public static EgressPolicy with(EgressPolicy policy, String host, HttpRule... rules) {
        List<HostEntry> entries = new ArrayList<>(policy.hosts());
        entries.add(new HostEntry(HostPattern.of(host), List.of(rules)));
        return new EgressPolicy(entries, policy.allowedRoutes(), policy.deniedRoutes());
    }

    /** {@code policy} and a route. */
    public static EgressPolicy route(EgressPolicy policy, String cidr, PortRange... ports) {
        List<Route> routes = new ArrayList<>(policy.allowedRoutes());
        routes.add(new Route(Prefix.parse(cidr), List.of(ports)));
        return new EgressPolicy(policy.hosts(), routes, policy.deniedRoutes());
    }

    /** {@code policy} denying {@code cidr}. */
    public static EgressPolicy deny(EgressPolicy policy, String cidr) {
        List<Prefix> denied = new ArrayList<>(policy.deniedRoutes());
        denied.add(Prefix.parse(cidr));
        return new EgressPolicy(policy.hosts(), policy.allowedRoutes(), denied);
    }

    /** A rule for every request that replaces {@code placeholder} by {@code secret} in header values. */
    public static HttpRule credential(String placeholder, String secret) {
        return new HttpRule(RequestMatch.ANY, Map.of(), Map.of(placeholder, new SecretText(secret)), Optional.empty());
    }

    /** A rule setting {@code header} to {@code value} on the requests {@code match} matches. */
    public static HttpRule header(RequestMatch match, String header, String value) {
        return new HttpRule(match, Map.of(header, new SecretText(value)), Map.of(), Optional.empty());
    }

    /** A rule sending the requests {@code match} matches to {@code url}. */
    public static HttpRule forward(RequestMatch match, String url) {
        return new HttpRule(match, Map.of(), Map.of(), Optional.of(java.net.URI.create(url)));
    }

    public static String cidr(InetAddress a) {
        return a.getHostAddress() + "/" + (a.getAddress().length * 8);
    }
}
