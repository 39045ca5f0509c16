package ai.chalk.compute.server.runtime.network;

import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Where a sandbox's traffic must never go, though slirp4netns would carry it there: slirp's NAT connects from the
 * host's own network namespace, so without these rules an address of the host reaches every service it listens on
 * ({@code 0.0.0.0} included), and cloud metadata hands out the host's credentials.
 *
 * <p>The list, and why it stops there:
 * <ul>
 *   <li>the slirp network itself ({@value SandboxNetwork#SLIRP_CIDR}) but its resolver: its gateway is the host;</li>
 *   <li>the egress proxy's links ({@value ProxyLinks#POOL}) whole, whether their host ends exist yet or not: the proxy
 *       takes a connection to a link's address for that link's sandbox, its policy and its credentials;</li>
 *   <li>every address of every host interface, read when a sandbox is attached (a bridge added later is covered
 *       from the next sandbox on), and loopback ({@code 127.0.0.0/8}, {@code ::1}, {@code 0.0.0.0/8});</li>
 *   <li>every prefix of the host's {@code local} routes, in any routing table: with one ("AnyIP",
 *       {@code ip route add local 198.51.100.0/24 dev lo}) the host answers a whole prefix that no interface lists
 *       as its address;</li>
 *   <li>link-local ({@code 169.254.0.0/16}, {@code fe80::/10}), which holds most clouds' metadata, and the metadata
 *       addresses outside it ({@code 100.100.100.200}, {@code fd00:ec2::254});</li>
 *   <li>not the rest of the private ranges: the host's resolver, package mirror or proxy often sits there and build
 *       steps need them. Networks the host alone uses (a Docker bridge's containers, say) can be added with
 *       {@link #plus}.</li>
 * </ul>
 *
 * @param prefixes the destinations, none inside another
 */
public record BlockedDestinations(List<Prefix> prefixes) {

    /** What is refused whatever the host's interfaces are. */
    static final List<String> ALWAYS = List.of(
            SandboxNetwork.SLIRP_CIDR,
            // the egress proxy's links: a host address per sandbox with a policy, made after a sandbox with full
            // network has its rules, and the proxy takes whoever reaches a link's address for that link's sandbox
            ProxyLinks.POOL,
            "0.0.0.0/8",
            "127.0.0.0/8",
            "169.254.0.0/16",
            "100.100.100.200",
            "::1",
            "fe80::/10",
            "fd00:ec2::254");

    public BlockedDestinations {
        prefixes = List.copyOf(prefixes);
    }

    /**
     * The fixed list alone ({@link #ALWAYS}), for when this host's interfaces cannot be read: what is refused on every
     * host, the metadata services and the egress proxy's links included.
     */
    public static BlockedDestinations always() {
        return new BlockedDestinations(List.of()).plus(ALWAYS);
    }

    /** The fixed list, the addresses of this host's interfaces and its local routes as they are now. */
    public static BlockedDestinations ofThisHost() throws IOException {
        List<Prefix> all = new ArrayList<>();
        ALWAYS.forEach(p -> all.add(Prefix.parse(p)));
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                all.add(Prefix.of(a));
            }
        }
        Path ipv6 = Path.of("/proc/net/ipv6_route"); // absent when the kernel has IPv6 off
        localRoutes(Files.readString(Path.of("/proc/net/fib_trie")), Files.exists(ipv6) ? Files.readString(ipv6) : "")
                .forEach(p -> all.add(Prefix.parse(p)));
        return new BlockedDestinations(minimal(all));
    }

    /**
     * The prefixes of the {@code local} routes in {@code fibTrie} ({@code /proc/net/fib_trie}: a key line
     * {@code |-- 198.51.100.0} then one line per prefix, {@code /24 host LOCAL}) and {@code ipv6Route}
     * ({@code /proc/net/ipv6_route}: destination and length in hex, {@code RTF_LOCAL} in the flags), read from the
     * kernel rather than from {@code ip}, as this runs on the egress proxy's path.
     */
    static List<String> localRoutes(String fibTrie, String ipv6Route) {
        List<String> prefixes = new ArrayList<>();
        String key = null;
        for (String line : fibTrie.split("\n")) {
            String t = line.trim();
            if (t.startsWith("|-- ")) {
                key = t.substring(4).trim();
            } else if (key != null && t.startsWith("/") && t.endsWith(" LOCAL")) {
                prefixes.add(key + t.substring(0, t.indexOf(' ')));
            }
        }
        for (String line : ipv6Route.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 10 && f[0].length() == 32 && (Long.parseLong(f[8], 16) & RTF_LOCAL) != 0) {
                StringBuilder address = new StringBuilder();
                for (int i = 0; i < 32; i += 4) {
                    address.append(i == 0 ? "" : ":").append(f[0], i, i + 4);
                }
                prefixes.add(address + "/" + Integer.parseInt(f[1], 16));
            }
        }
        return prefixes;
    }

    /** {@code RTF_LOCAL} of {@code linux/ipv6_route.h}: a route to an address of this host. */
    private static final long RTF_LOCAL = 0x80000000L;

    /** These and {@code cidrs} ({@code 172.17.0.0/16}, {@code 10.1.2.3}, {@code fd00:1::/64}) as well. */
    public BlockedDestinations plus(List<String> cidrs) {
        List<Prefix> all = new ArrayList<>(prefixes);
        cidrs.forEach(c -> all.add(Prefix.parse(c)));
        return new BlockedDestinations(minimal(all));
    }

    List<Prefix> v4() {
        return prefixes.stream().filter(Prefix::isV4).toList();
    }

    List<Prefix> v6() {
        return prefixes.stream().filter(p -> !p.isV4()).toList();
    }

    /** Without duplicates and prefixes inside another: nft refuses overlapping elements of an interval set. */
    private static List<Prefix> minimal(List<Prefix> all) {
        List<Prefix> distinct = List.copyOf(new java.util.LinkedHashSet<>(all));
        return distinct.stream()
                .filter(p -> distinct.stream().noneMatch(q -> q.length() < p.length() && q.contains(p)))
                .toList();
    }
}
