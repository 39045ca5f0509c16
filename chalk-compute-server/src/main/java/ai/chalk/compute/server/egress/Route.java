package ai.chalk.compute.server.egress;

import ai.chalk.compute.server.runtime.network.Prefix;
import java.net.InetAddress;
import java.util.List;

/**
 * An entry of a policy's {@code allowed_routes}: the addresses of a prefix ({@code 10.1.0.0/16}, {@code 2001:db8::/32},
 * one address), on the ports of its ranges, or on every port when it lists none.
 *
 * @param prefix the addresses
 * @param ports  the ports; empty for all
 */
public record Route(Prefix prefix, List<PortRange> ports) {

    public Route {
        ports = List.copyOf(ports);
    }

    /** Whether a connection to {@code address} on {@code port} is covered. */
    public boolean allows(InetAddress address, int port) {
        return prefix.contains(Prefix.of(address))
                && (ports.isEmpty() || ports.stream().anyMatch(r -> r.contains(port)));
    }

    /** Whether this route is every IPv4 (or IPv6) address on every port: the whole network. */
    public boolean isEverything() {
        return prefix.length() == 0 && ports.isEmpty();
    }

    /** Whether this route allows every IPv4 address on every port ({@code 0.0.0.0/0}). */
    public boolean isEveryIpv4Address() {
        return isEverything() && prefix.isV4();
    }

    @Override
    public String toString() {
        String p = prefix.address().getHostAddress() + "/" + prefix.length();
        return ports.isEmpty() ? p : p + " ports " + ports;
    }
}
