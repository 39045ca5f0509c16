package ai.chalk.compute.server.runtime.network;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The only way out of a sandbox with a network policy: a veth pair from its network namespace to the server's host,
 * on a /30 of {@value #POOL} of its own, where the egress proxy listens on the host's end and nothing routes further.
 *
 * <p>Why a veth pair and not slirp4netns with its outbound limited to the proxy: slirp4netns makes every connection
 * from the host's network namespace itself, so a rule that lets the proxy's address through lets through whatever
 * shares that address (the host's loopback services, for one), and the proxy could not tell sandboxes apart (all come
 * from the host). A veth link gives each sandbox an address of its own for the proxy to listen on, which identifies it,
 * and no path anywhere else at all: the sandbox's namespace has no default route, so a direct connection to any address
 * but the proxy's (TCP, UDP, a raw socket's packet, ICMP) fails with "network unreachable"; the link has no IPv6 (it is
 * switched off on both ends, so not even a link-local address exists); and two firewalls back that up, which sandbox
 * code cannot change (it has no CAP_NET_ADMIN):
 * <ul>
 *   <li>in the sandbox's namespace ({@code table inet chalk_egress}, installed before the link comes up): only its
 *       loopback and the proxy's ports ({@code tcp 3128, 80, 443}, {@code udp 53}) on the proxy's address; the rest is
 *       refused at once (TCP reset, ICMP admin-prohibited);</li>
 *   <li>on the host ({@code table inet chalk_egress_links}, for every interface named {@value #PREFIX}*): nothing is
 *       forwarded from or to these links (so a crafted packet for another address goes nowhere, even on a host that
 *       forwards for Docker), and what they deliver to the host must be for the link's own address (not another
 *       sandbox's proxy, not another host address) and for one of the proxy's ports.</li>
 * </ul>
 *
 * <p>A link is made in two steps: {@link #reserve()} before the sandbox starts (its addresses go into the sandbox's
 * environment), then {@link Link#attach(long)} once its init holds the namespace. Its name is the lock: the kernel
 * refuses a second interface of the same name, so servers sharing a host never take the same /30. It needs
 * CAP_NET_ADMIN on the host (the server runs as root), iproute2 and nftables.
 */
public final class ProxyLinks {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ProxyLinks.class);

    /** The addresses of sandboxes' links: a /30 each, the host's end {@code .1} and the sandbox's {@code .2}. */
    public static final String POOL = "10.199.0.0/16";
    /** Host-side interfaces of the links are named this and the link's number. */
    public static final String PREFIX = "chx";
    /** The interface's name inside the sandbox. */
    public static final String SANDBOX_INTERFACE = "egress0";
    /** The sandbox-side rules' table. */
    static final String SANDBOX_TABLE = "chalk_egress";
    /** The host-side rules' table. */
    static final String HOST_TABLE = "chalk_egress_links";

    /** The /30s of {@link #POOL}: the first half for the local runtime's links, the second for Docker networks. */
    private static final int SLOTS = 1 << 14;
    /** The first /30 of the Docker runtime's networks. */
    public static final int DOCKER_FIRST_SLOT = SLOTS / 2;
    /** How many /30s the Docker runtime's networks have. */
    public static final int DOCKER_SLOTS = SLOTS - DOCKER_FIRST_SLOT;

    private final Path ip;
    private final Path nft;
    private final Path nsenter;
    private final String sh;
    private final int[] proxyTcpPorts;
    private final int dnsPort;

    private ProxyLinks(Path ip, Path nft, Path nsenter, int[] proxyTcpPorts, int dnsPort) {
        this.ip = ip;
        this.nft = nft;
        this.nsenter = nsenter;
        this.sh = Files.isExecutable(Path.of("/bin/sh")) ? "/bin/sh" : "/usr/bin/sh";
        this.proxyTcpPorts = proxyTcpPorts.clone();
        this.dnsPort = dnsPort;
    }

    /**
     * The links of this host, its firewall rules installed; or why sandboxes with a network policy cannot run here.
     *
     * @param proxyTcpPorts the TCP ports the proxy listens on at a link's host end
     * @param dnsPort       its resolver's UDP port there
     * @throws RuntimeStartException when the server lacks CAP_NET_ADMIN or the tools, naming what to do
     */
    public static ProxyLinks onThisHost(int[] proxyTcpPorts, int dnsPort) throws RuntimeStartException {
        List<String> missing = new ArrayList<>();
        Path ip = which("ip", missing);
        Path nft = which("nft", missing);
        Path nsenter = which("nsenter", missing);
        if (!missing.isEmpty()) {
            throw new RuntimeStartException("a sandbox with a network policy needs " + String.join(", ", missing)
                    + " (not found in " + EgressTools.SEARCH_PATH + "): install iproute2, nftables and util-linux");
        }
        if (!hasNetAdmin()) {
            throw new RuntimeStartException("a sandbox with a network policy gets a network link of its own to the"
                    + " server's egress proxy, which needs CAP_NET_ADMIN: run the server as root, or create the"
                    + " sandbox without a network policy");
        }
        String taken = addressInPool();
        if (taken != null) {
            throw new RuntimeStartException("the host's interface " + taken + " has an address in " + POOL
                    + ", which the egress proxy's links use: a sandbox with a network policy needs that range free");
        }
        ProxyLinks links = new ProxyLinks(ip, nft, nsenter, proxyTcpPorts, dnsPort);
        try {
            String failed = EgressTools.run(List.of(nft.toString(), "-f", "-"), links.hostRules(true));
            if (failed != null) {
                // a kernel before 5.3, or an nft before 0.9.2, has no socket match: the rest still holds
                String without = EgressTools.run(List.of(nft.toString(), "-f", "-"), links.hostRules(false));
                if (without == null) {
                    log.warn(
                            "The host's nft cannot match sockets ({}): where the egress proxy does not listen on a"
                                    + " sandbox's link (the sandbox starting or ending), a host service listening on every"
                                    + " address may answer it there",
                            failed.strip());
                }
                failed = without;
            }
            if (failed != null) {
                throw new RuntimeStartException(
                        "cannot install the host's firewall rules for sandboxes' links (nft): " + failed);
            }
        } catch (IOException e) {
            throw new RuntimeStartException("cannot run nft: " + e.getMessage(), e);
        }
        return links;
    }

    /** An interface of the host other than the links with an IPv4 address in {@link #POOL}; null when none. */
    private static String addressInPool() {
        Prefix pool = Prefix.parse(POOL);
        try {
            for (java.net.NetworkInterface nic :
                    java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
                if (nic.getName().startsWith(PREFIX)) {
                    continue;
                }
                for (InetAddress a : java.util.Collections.list(nic.getInetAddresses())) {
                    if (pool.contains(Prefix.of(a))) {
                        return nic.getName() + " (" + a.getHostAddress() + ")";
                    }
                }
            }
        } catch (java.net.SocketException e) {
            // interfaces unreadable: the links' own setup fails where the range is taken
        }
        return null;
    }

    /**
     * A new link with both ends still on the host, the host's end addressed and up (so the proxy can listen there).
     *
     * @throws IOException when no /30 is free or the interface cannot be made
     */
    public Link reserve() throws IOException {
        int start = ThreadLocalRandom.current().nextInt(DOCKER_FIRST_SLOT);
        String lastFailure = "";
        for (int i = 0; i < 64; i++) {
            int slot = (start + i * 7919) % DOCKER_FIRST_SLOT;
            String host = PREFIX + slot;
            String peer = PREFIX + slot + "p";
            String failed = EgressTools.run(
                    List.of(ip.toString(), "link", "add", host, "type", "veth", "peer", "name", peer), "");
            if (failed != null) {
                lastFailure = failed;
                continue; // taken (by this server or another on the host): the next one
            }
            Link link = new Link(slot, host, peer);
            try {
                check(EgressTools.run(
                        List.of(
                                sh,
                                "-c",
                                "set -e; echo 1 > /proc/sys/net/ipv6/conf/$1/disable_ipv6;"
                                        + " echo 1 > /proc/sys/net/ipv4/conf/$1/rp_filter;"
                                        + " $2 addr add $3/30 dev $1; $2 link set $1 up",
                                "sh",
                                host,
                                ip.toString(),
                                link.hostAddress().getHostAddress()),
                        ""));
            } catch (IOException e) {
                link.close();
                throw e;
            }
            return link;
        }
        throw new IOException("no free link for the sandbox in " + POOL + " (" + lastFailure + ")");
    }

    /**
     * The host-side rules, as {@code nft -f -} reads them: replaced as a whole, the same for every server.
     *
     * @param socketMatch with the rules that need nft's socket match (Linux 5.3)
     */
    String hostRules(boolean socketMatch) {
        String tcp = ports(proxyTcpPorts);
        String ifs = "\"" + PREFIX + "*\"";
        return "table inet " + HOST_TABLE + " {}\n"
                + "delete table inet " + HOST_TABLE + "\n"
                + "table inet " + HOST_TABLE + " {\n"
                + "  chain input {\n"
                + "    type filter hook input priority filter - 5; policy accept;\n"
                // a link's addresses answer only on their link: the proxy knows a sandbox by the address reached, so
                // anyone else reaching it (a local process, a container of another bridge, a neighbour routing the
                // pool through this host) had that sandbox's policy and credentials
                + "    ip daddr " + POOL + " iifname != " + ifs + " meta l4proto tcp reject with tcp reset\n"
                + "    ip daddr " + POOL + " iifname != " + ifs + " reject with icmpx admin-prohibited\n"
                + "    iifname " + ifs + " fib daddr . iif type != local drop\n"
                // only the proxy, bound to the link's own address, answers there: where it does not listen (its
                // sandbox starting or ending, a server gone), a host service on every address would
                + (socketMatch
                        ? "    iifname " + ifs + " meta l4proto tcp socket wildcard 1 reject with tcp reset\n"
                                + "    iifname " + ifs
                                + " meta l4proto udp socket wildcard 1 reject with icmpx admin-prohibited\n"
                        : "")
                + "    iifname " + ifs + " tcp dport { " + tcp + " } accept\n"
                + "    iifname " + ifs + " udp dport " + dnsPort + " accept\n"
                + "    iifname " + ifs + " meta l4proto tcp reject with tcp reset\n"
                + "    iifname " + ifs + " reject with icmpx admin-prohibited\n"
                + "  }\n"
                + "  chain forward {\n"
                + "    type filter hook forward priority filter - 5; policy accept;\n"
                + "    iifname " + ifs + " meta l4proto tcp reject with tcp reset\n"
                + "    iifname " + ifs + " reject with icmpx admin-prohibited\n"
                + "    oifname " + ifs + " drop\n"
                + "  }\n"
                + "}\n";
    }

    /** The sandbox-side rules for a link whose proxy is at {@code proxy}. */
    String sandboxRules(InetAddress proxy) {
        String a = proxy.getHostAddress();
        return "table inet " + SANDBOX_TABLE + " {\n"
                + "  chain output {\n"
                + "    type filter hook output priority filter; policy accept;\n"
                // the engine's resolver in a container of a user-defined network, which older engines let forward
                // through the host's own resolver: any name would resolve, and carry data out
                + "    ip daddr 127.0.0.11 reject\n"
                + "    oifname \"lo\" accept\n"
                + "    ip daddr " + a + " tcp dport { " + ports(proxyTcpPorts) + " } accept\n"
                + "    ip daddr " + a + " udp dport " + dnsPort + " accept\n"
                + "    meta l4proto tcp reject with tcp reset\n"
                + "    reject with icmpx admin-prohibited\n"
                + "  }\n"
                + "}\n";
    }

    private static String ports(int[] ports) {
        StringBuilder s = new StringBuilder();
        for (int p : ports) {
            s.append(s.isEmpty() ? "" : ", ").append(p);
        }
        return s.toString();
    }

    /** One sandbox's link. */
    public final class Link implements AutoCloseable {

        private final int slot;
        private final String hostInterface;
        private final String peerInterface;
        private volatile boolean closed;

        private Link(int slot, String hostInterface, String peerInterface) {
            this.slot = slot;
            this.hostInterface = hostInterface;
            this.peerInterface = peerInterface;
        }

        /** The host's end: where the proxy listens for this sandbox. */
        public InetAddress hostAddress() {
            return address(1);
        }

        /** The sandbox's end. */
        public InetAddress sandboxAddress() {
            return address(2);
        }

        private InetAddress address(int last) {
            int n = (10 << 24) | (199 << 16) | (slot << 2) | last;
            try {
                return InetAddress.getByAddress(
                        new byte[] {(byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n});
            } catch (java.net.UnknownHostException e) {
                throw new IllegalStateException(e);
            }
        }

        /**
         * Moves the sandbox's end into the network namespace of host process {@code pid} (not the server's): its rules
         * first, then the interface ({@value #SANDBOX_INTERFACE}, IPv6 off, the /30 address, up).
         */
        public void attach(long pid) throws IOException {
            Path netns = Path.of("/proc", Long.toString(pid), "ns", "net");
            String target = Files.readSymbolicLink(netns).toString();
            if (target.equals(
                    Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString())) {
                throw new IOException("process " + pid + " shares the server's network namespace");
            }
            check(EgressTools.run(
                    List.of(nsenter.toString(), "--net=" + netns, "--", nft.toString(), "-f", "-"),
                    sandboxRules(hostAddress())));
            check(EgressTools.run(
                    List.of(ip.toString(), "link", "set", peerInterface, "netns", Long.toString(pid)), ""));
            if (!target.equals(Files.readSymbolicLink(netns).toString())) {
                throw new IOException("process " + pid + " ended while its network link was set up");
            }
            check(EgressTools.run(
                    List.of(
                            nsenter.toString(),
                            "--net=" + netns,
                            "--",
                            sh,
                            "-c",
                            "set -e; $1 link set $2 name $3; echo 1 > /proc/sys/net/ipv6/conf/$3/disable_ipv6;"
                                    + " $1 addr add $4/30 dev $3; $1 link set $3 up; $1 link set lo up",
                            "sh",
                            ip.toString(),
                            peerInterface,
                            SANDBOX_INTERFACE,
                            sandboxAddress().getHostAddress()),
                    ""));
        }

        /** Removes the link (both ends, wherever the sandbox's is); idempotent. */
        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            try {
                EgressTools.run(List.of(ip.toString(), "link", "del", hostInterface), "");
            } catch (IOException e) {
                // gone with the sandbox's namespace already
            }
        }

        @Override
        public String toString() {
            return "Link[" + hostInterface + " " + hostAddress().getHostAddress() + " <-> "
                    + sandboxAddress().getHostAddress() + "]";
        }
    }

    /** Address {@code last} (1 the host's end, 2 the sandbox's) of /30 number {@code slot} of {@link #POOL}. */
    public static InetAddress address(int slot, int last) {
        int n = (10 << 24) | (199 << 16) | (slot << 2) | last;
        try {
            return InetAddress.getByAddress(
                    new byte[] {(byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n});
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Installs the sandbox-side rules (only loopback and the proxy's ports at {@code proxy}) in the network namespace
     * of host process {@code pid}: for a namespace made by someone else, a Docker container's.
     */
    public void fence(long pid, InetAddress proxy) throws IOException {
        check(EgressTools.run(
                List.of(nsenter.toString(), "--net=/proc/" + pid + "/ns/net", "--", nft.toString(), "-f", "-"),
                sandboxRules(proxy)));
    }

    private static void check(String failure) throws IOException {
        if (failure != null) {
            throw new IOException("cannot set up the sandbox's network link: " + failure);
        }
    }

    /** Whether this process has CAP_NET_ADMIN (bit 12 of its effective capabilities). */
    static boolean hasNetAdmin() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("CapEff:")) {
                    return (Long.parseUnsignedLong(line.substring(7).strip(), 16) & (1L << 12)) != 0;
                }
            }
        } catch (IOException | NumberFormatException e) {
            return false;
        }
        return false;
    }

    private static Path which(String name, List<String> missing) {
        for (String dir : EgressTools.SEARCH_PATH.split(":")) {
            Path p = Path.of(dir, name);
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return p;
            }
        }
        missing.add(name);
        return Path.of(name);
    }
}
