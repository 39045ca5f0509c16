package ai.chalk.compute.server.runtime.network;

import java.util.List;
import java.util.stream.Collectors;

/**
 * The nftables ruleset installed in a sandbox's network namespace before its link comes up: traffic that stays on the
 * sandbox's loopback passes, DNS to slirp's resolver passes, {@link BlockedDestinations} are refused, the rest goes
 * out through slirp. Refused, not dropped: a TCP connect gets a reset and anything else an ICMP error at once, so
 * a probe fails in milliseconds instead of waiting out a timeout. Only the output hook matters: slirp forwards no
 * port in, and nothing in the namespace routes.
 */
final class EgressRules {

    /** The table the rules live in; sandbox code cannot remove it (changing nftables needs CAP_NET_ADMIN). */
    static final String TABLE = "chalk_egress";

    private EgressRules() {}

    /** The ruleset, as {@code nft -f -} reads it. */
    static String render(BlockedDestinations blocked) {
        return "table inet " + TABLE + " {\n"
                + set("blocked_v4", "ipv4_addr", blocked.v4())
                + set("blocked_v6", "ipv6_addr", blocked.v6())
                + "  chain output {\n"
                + "    type filter hook output priority filter; policy accept;\n"
                + "    oifname \"lo\" accept\n"
                + "    ip daddr " + SandboxNetwork.RESOLVER + " udp dport 53 accept\n"
                + "    ip daddr " + SandboxNetwork.RESOLVER + " tcp dport 53 accept\n"
                + "    ip daddr @blocked_v4 meta l4proto tcp reject with tcp reset\n"
                + "    ip daddr @blocked_v4 reject with icmpx admin-prohibited\n"
                + "    ip6 daddr @blocked_v6 meta l4proto tcp reject with tcp reset\n"
                + "    ip6 daddr @blocked_v6 reject with icmpx admin-prohibited\n"
                + "  }\n"
                + "}\n";
    }

    private static String set(String name, String type, List<Prefix> elements) {
        String s = "  set " + name + " {\n    type " + type + "; flags interval;\n";
        if (!elements.isEmpty()) {
            s += "    elements = { " + elements.stream().map(Prefix::nft).collect(Collectors.joining(", ")) + " }\n";
        }
        return s + "  }\n";
    }
}
