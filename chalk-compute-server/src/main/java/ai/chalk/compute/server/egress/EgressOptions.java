package ai.chalk.compute.server.egress;

import java.net.InetAddress;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * How the egress proxy reaches the outside: names it resolves by a fixed table before asking the system resolver (as
 * {@code /etc/hosts} would; a site with split DNS pins its internal names here), and CAs it trusts besides the JDK's
 * when it connects to an intercepted host (a corporate TLS-inspecting gateway's CA, or a test's).
 *
 * @param hosts        name (lower case) to its addresses, consulted first
 * @param upstreamTrust a PEM file of further CAs trusted for intercepted hosts' certificates; empty for the JDK's only
 * @param connections  how many connections the proxy holds at once, per sandbox and in total
 */
public record EgressOptions(
        Map<String, List<InetAddress>> hosts, Optional<Path> upstreamTrust, EgressConnections connections) {

    /** The system resolver, the JDK's CAs and {@link EgressConnections#forThisServer()}. */
    public static final EgressOptions DEFAULTS =
            new EgressOptions(Map.of(), Optional.empty(), EgressConnections.forThisServer());

    public EgressOptions {
        Map<String, List<InetAddress>> h = new LinkedHashMap<>();
        hosts.forEach((k, v) -> h.put(HostPattern.normalize(k), List.copyOf(v)));
        hosts = Collections.unmodifiableMap(h);
    }

    /** These options with {@code name} resolving to {@code addresses}. */
    public EgressOptions withHost(String name, InetAddress... addresses) {
        Map<String, List<InetAddress>> h = new LinkedHashMap<>(hosts);
        h.put(name, List.of(addresses));
        return new EgressOptions(h, upstreamTrust, connections);
    }

    /** These options trusting the CAs of {@code pemFile} for intercepted hosts. */
    public EgressOptions withUpstreamTrust(Path pemFile) {
        return new EgressOptions(hosts, Optional.of(pemFile), connections);
    }

    /** These options holding at most {@code limits} connections at once. */
    public EgressOptions withConnections(EgressConnections limits) {
        return new EgressOptions(hosts, upstreamTrust, limits);
    }
}
