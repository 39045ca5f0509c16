package ai.chalk.compute.server.egress;

import ai.chalk.compute.server.runtime.network.BlockedDestinations;
import ai.chalk.compute.server.runtime.network.Prefix;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Where the proxy may connect: names resolved (the options' table first, then the system resolver, off the event
 * loops), and the addresses no sandbox may reach whatever its policy says: the server host's own addresses (read
 * again at most every few seconds, so a bridge added later is covered), loopback, link-local, cloud metadata
 * ({@link BlockedDestinations}), and the links of sandboxes themselves.
 */
final class Destinations {

    private static final long REFRESH_NANOS = 5_000_000_000L;

    private final Map<String, List<InetAddress>> table;
    private final List<String> alsoForbidden;
    private final Executor resolver;
    private volatile BlockedDestinations blocked;
    private volatile long blockedAt;

    /**
     * @param table         names resolved without asking the system
     * @param alsoForbidden prefixes refused besides the host's own (the sandboxes' link networks)
     * @param resolver      where lookups block
     */
    Destinations(Map<String, List<InetAddress>> table, List<String> alsoForbidden, Executor resolver) {
        this.table = Map.copyOf(table);
        this.alsoForbidden = List.copyOf(alsoForbidden);
        this.resolver = resolver;
        refresh();
    }

    /**
     * The addresses of {@code host} (an IP literal is its own), empty when it does not resolve; failed with
     * {@link SandboxLookups.Busy} when the resolver has more lookups waiting than it takes.
     */
    CompletableFuture<List<InetAddress>> resolve(String host) {
        String h = HostPattern.normalize(host);
        List<InetAddress> pinned = table.get(h);
        if (pinned != null) {
            return CompletableFuture.completedFuture(pinned);
        }
        if (isLiteral(h)) {
            try {
                return CompletableFuture.completedFuture(List.of(InetAddress.getByName(h)));
            } catch (UnknownHostException e) {
                return CompletableFuture.completedFuture(List.of());
            }
        }
        try {
            return CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            return List.of(InetAddress.getAllByName(h));
                        } catch (UnknownHostException e) {
                            return List.<InetAddress>of();
                        }
                    },
                    resolver);
        } catch (RejectedExecutionException e) {
            return CompletableFuture.failedFuture(new SandboxLookups.Busy(
                    "every name lookup thread of the egress proxy is busy and its queue is full; try again"));
        }
    }

    /** Whether no sandbox may ever reach {@code address}. */
    boolean forbidden(InetAddress address) {
        if (System.nanoTime() - blockedAt > REFRESH_NANOS) {
            refresh();
        }
        Prefix p = Prefix.of(address);
        return address.isAnyLocalAddress()
                || address.isMulticastAddress()
                || blocked.prefixes().stream().anyMatch(b -> b.contains(p));
    }

    private synchronized void refresh() {
        try {
            blocked = BlockedDestinations.ofThisHost().plus(alsoForbidden);
        } catch (IOException e) {
            if (blocked == null) {
                blocked = BlockedDestinations.always().plus(alsoForbidden);
            }
        }
        blockedAt = System.nanoTime();
    }

    /** Whether {@code host} is an IPv4 or IPv6 literal rather than a name. */
    static boolean isLiteral(String host) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        return h.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}") || (h.contains(":") && h.matches("[0-9a-fA-F:.]+"));
    }
}
