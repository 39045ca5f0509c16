package ai.chalk.compute.server.egress;

import ai.chalk.compute.server.runtime.network.Prefix;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * What a sandbox may reach through the egress proxy ({@code chalk.container.v1.NetworkPolicy}, its secrets resolved):
 * hosts by name ({@code allowed_hosts}, exact or {@code *.} wildcards, with the rules of each), addresses by prefix and
 * port ({@code allowed_routes}), and addresses it may never reach whatever allowed them ({@code denied_routes}). The
 * proxy resolves names itself; a destination is allowed when its name is listed or one of its addresses is in an
 * allowed route, and only to addresses outside the denied routes and outside what no sandbox may ever reach (the
 * server host's own addresses, loopback, link-local, cloud metadata).
 *
 * <p>Its {@code toString} names hosts, routes and header names, never a header value or a secret.
 *
 * @param hosts         the allowed hosts
 * @param allowedRoutes the allowed routes
 * @param deniedRoutes  the denied prefixes
 */
public record EgressPolicy(List<HostEntry> hosts, List<Route> allowedRoutes, List<Prefix> deniedRoutes) {

    public EgressPolicy {
        hosts = List.copyOf(hosts);
        allowedRoutes = List.copyOf(allowedRoutes);
        deniedRoutes = List.copyOf(deniedRoutes);
    }

    /** The entry that governs {@code host}: an exact one first, else the longest wildcard that matches. */
    public Optional<HostEntry> entryFor(String host) {
        return hosts.stream()
                .filter(e -> e.pattern().matches(host))
                .max(Comparator.comparingInt(e -> e.pattern().specificity()));
    }

    /**
     * Whether a connection to {@code host} on {@code port} may go out, and to which of its addresses.
     *
     * @param host      the name or IP literal the sandbox asked for
     * @param port      the port
     * @param resolved  the addresses of {@code host} (the literal's own for an IP literal); empty when it does not
     *                  resolve
     * @param forbidden the addresses no sandbox may reach, whatever its policy says
     */
    public Decision decide(String host, int port, List<InetAddress> resolved, Predicate<InetAddress> forbidden) {
        Optional<HostEntry> entry = entryFor(host);
        if (resolved.isEmpty()) {
            return Decision.refuse(host + " does not resolve");
        }
        List<InetAddress> denied = resolved.stream().filter(this::denied).toList();
        List<InetAddress> open = new ArrayList<>(resolved);
        open.removeAll(denied);
        open.removeIf(forbidden);
        if (open.isEmpty()) {
            return Decision.refuse(
                    !denied.isEmpty()
                            ? host + " resolves to " + addresses(denied) + ", which denied_routes covers"
                            : host + " resolves to " + addresses(resolved)
                                    + ", addresses of the server's host, loopback,"
                                    + " link-local or cloud metadata, which no sandbox may reach");
        }
        if (entry.isPresent()) {
            return Decision.allow(open, entry);
        }
        List<InetAddress> routed = open.stream()
                .filter(a -> allowedRoutes.stream().anyMatch(r -> r.allows(a, port)))
                .toList();
        if (routed.isEmpty()) {
            return Decision.refuse(host + " is not in allowed_hosts"
                    + (allowedRoutes.isEmpty()
                            ? ""
                            : " and no allowed_routes entry covers " + addresses(open) + " port " + port));
        }
        return Decision.allow(routed, Optional.empty());
    }

    /** Whether some allowed route covers {@code address} on any port (for a name the resolver may answer). */
    public boolean routesTo(InetAddress address) {
        return !denied(address)
                && allowedRoutes.stream().anyMatch(r -> r.prefix().contains(Prefix.of(address)));
    }

    /** Whether {@code address} is in a denied route. */
    public boolean denied(InetAddress address) {
        Prefix p = Prefix.of(address);
        return deniedRoutes.stream().anyMatch(d -> d.contains(p));
    }

    /** The policy in a line for messages: hosts and routes, nothing of the rules but that there are some. */
    public String describe() {
        List<String> parts = new ArrayList<>();
        if (!hosts.isEmpty()) {
            parts.add("allowed_hosts "
                    + hosts.stream().map(e -> e.pattern().pattern()).collect(Collectors.joining(", ")));
        }
        if (!allowedRoutes.isEmpty()) {
            parts.add("allowed_routes "
                    + allowedRoutes.stream().map(Route::toString).collect(Collectors.joining(", ")));
        }
        if (!deniedRoutes.isEmpty()) {
            parts.add("denied_routes "
                    + deniedRoutes.stream()
                            .map(p -> p.address().getHostAddress() + "/" + p.length())
                            .collect(Collectors.joining(", ")));
        }
        return parts.isEmpty() ? "nothing allowed" : String.join("; ", parts);
    }

    private static String addresses(List<InetAddress> a) {
        return a.stream().map(InetAddress::getHostAddress).collect(Collectors.joining(", "));
    }

    @Override
    public String toString() {
        return "EgressPolicy[" + describe() + "; "
                + hosts.stream().mapToInt(h -> h.rules().size()).sum() + " rules]";
    }
}
