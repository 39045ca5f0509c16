package ai.chalk.compute.server.runtime.network;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the egress rules refuse, computed from this host's real interfaces. */
class BlockedDestinationsTest {

    @Test
    void everyAddressOfEveryHostInterfaceAndTheMetadataAddressesAreRefused() throws Exception {
        BlockedDestinations blocked = BlockedDestinations.ofThisHost();
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                assertThat(blocked.prefixes()).as("%s of %s", a, nic.getName()).anyMatch(p -> p.contains(Prefix.of(a)));
            }
        }
        for (String metadata : List.of(
                "169.254.169.254",
                "169.254.170.2",
                "100.100.100.200",
                "fd00:ec2::254",
                "10.0.2.2",
                "127.0.0.1",
                "::1",
                "fe80::1")) {
            assertThat(blocked.prefixes()).as(metadata).anyMatch(p -> p.contains(Prefix.parse(metadata)));
        }
        assertThat(blocked.prefixes())
                .as("slirp's resolver is not refused as such (the rules let port 53 through)")
                .anyMatch(p -> p.contains(Prefix.parse(SandboxNetwork.RESOLVER)));
    }

    @Test
    void theHostsLocalRoutesAreReadFromTheKernelsTables() {
        String fibTrie = """
                Main:
                  +-- 0.0.0.0/0 3 0 5
                     |-- 192.0.2.0
                        /24 link UNICAST
                     |-- 192.0.2.2
                        /32 host LOCAL
                     |-- 198.51.100.200
                        /29 host LOCAL
                     |-- 192.0.2.255
                        /32 link BROADCAST
                """;
        String ipv6Route = String.join(
                "\n",
                "20010db8000500000000000000000000 40 00000000000000000000000000000000 00"
                        + " 00000000000000000000000000000000 00000400 00000001 00000000 80000001       lo",
                "fd000000000000000000000000000000 40 00000000000000000000000000000000 00"
                        + " 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0",
                "");
        assertThat(BlockedDestinations.localRoutes(fibTrie, ipv6Route))
                .containsExactly("192.0.2.2/32", "198.51.100.200/29", "2001:0db8:0005:0000:0000:0000:0000:0000/64");
        assertThat(Prefix.parse("2001:0db8:0005:0000:0000:0000:0000:0000/64").contains(Prefix.parse("2001:db8:5::7")))
                .isTrue();
    }

    @Test
    void noPrefixIsInsideAnotherSoNftAcceptsTheSet() throws Exception {
        BlockedDestinations blocked = BlockedDestinations.ofThisHost()
                .plus(List.of("172.17.0.0/16", "172.17.0.1", "127.0.0.1", "10.0.2.0/24"));
        for (Prefix p : blocked.prefixes()) {
            assertThat(blocked.prefixes()).as("inside %s", p.nft()).noneMatch(q -> q != p && p.contains(q));
        }
        assertThat(blocked.prefixes())
                .contains(Prefix.parse("172.17.0.0/16"))
                .doesNotContain(Prefix.parse("172.17.0.1"));
    }

    @Test
    void prefixesAreLiteralAddressesNeverNamesToResolve() {
        assertThat(Prefix.parse("10.0.2.7/24").nft()).isEqualTo("10.0.2.0/24");
        assertThat(Prefix.parse("fd00:ec2::254").nft()).isEqualTo("fd00:ec2:0:0:0:0:0:254");
        assertThatThrownBy(() -> Prefix.parse("metadata.google.internal")).hasMessageContaining("not an IP address");
        assertThatThrownBy(() -> Prefix.parse("10.0.0.0/33")).hasMessageContaining("out of range");
        assertThatThrownBy(() -> new SandboxNetwork(null, List.of("localhost"), ProcessBuilder::start))
                .hasMessageContaining("not an IP address");
    }

    @Test
    void theRulesLetLoopbackAndDnsThroughAndRefuseTheRest() throws Exception {
        String rules = EgressRules.render(BlockedDestinations.ofThisHost());
        assertThat(rules)
                .contains(
                        "hook output",
                        "oifname \"lo\" accept",
                        "ip daddr 10.0.2.3 udp dport 53 accept",
                        "ip daddr @blocked_v4 meta l4proto tcp reject with tcp reset",
                        "ip6 daddr @blocked_v6 reject with icmpx admin-prohibited",
                        "169.254.0.0/16",
                        "100.100.100.200");
        assertThat(rules.indexOf("dport 53 accept")).isLessThan(rules.indexOf("reject"));
    }
}
