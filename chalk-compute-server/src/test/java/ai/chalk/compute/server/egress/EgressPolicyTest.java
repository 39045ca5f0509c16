package ai.chalk.compute.server.egress;

import static ai.chalk.compute.server.egress.Policies.credential;
import static ai.chalk.compute.server.egress.Policies.deny;
import static ai.chalk.compute.server.egress.Policies.hosts;
import static ai.chalk.compute.server.egress.Policies.route;
import static ai.chalk.compute.server.egress.Policies.with;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/** Which destinations a policy allows, and where to, decided on the addresses the proxy resolved. */
class EgressPolicyTest {

    private static final Predicate<InetAddress> NOTHING_FORBIDDEN = a -> false;

    private static List<InetAddress> at(String... addresses) throws Exception {
        InetAddress[] a = new InetAddress[addresses.length];
        for (int i = 0; i < addresses.length; i++) {
            a[i] = InetAddress.getByName(addresses[i]);
        }
        return List.of(a);
    }

    @Test
    void exactNamesAndWildcardsMatchAsCertificatesDo() {
        HostPattern wild = HostPattern.of("*.Slack.com.");
        assertThat(wild.matches("api.slack.com")).isTrue();
        assertThat(wild.matches("a.b.SLACK.com")).isTrue();
        assertThat(wild.matches("slack.com")).isFalse();
        assertThat(wild.matches("evilslack.com")).isFalse();
        assertThat(HostPattern.of("api.openai.com").matches("API.OPENAI.COM.")).isTrue();
        assertThat(HostPattern.of("api.openai.com").matches("x.api.openai.com")).isFalse();
        assertThatThrownBy(() -> HostPattern.of("api.*.com")).hasMessageContaining("whole first label");
        assertThatThrownBy(() -> HostPattern.of("*")).hasMessageContaining("not a host name");
    }

    @Test
    void theMostSpecificEntryGovernsAHost() {
        EgressPolicy p = with(with(hosts(), "*.example.com", credential("A", "a")), "api.example.com");
        assertThat(p.entryFor("api.example.com").orElseThrow().pattern().pattern())
                .isEqualTo("api.example.com");
        assertThat(p.entryFor("www.example.com").orElseThrow().intercepted()).isTrue();
        assertThat(p.entryFor("api.example.com").orElseThrow().intercepted()).isFalse();
    }

    @Test
    void aListedNameGoesToEveryAddressNotDeniedNorForbidden() throws Exception {
        EgressPolicy p = deny(hosts("db.test"), "10.0.0.0/24");
        Decision d = p.decide("db.test", 443, at("10.0.0.5", "10.0.1.5", "127.0.0.1"), InetAddress::isLoopbackAddress);
        assertThat(d.allowed()).isTrue();
        assertThat(d.addresses()).containsExactly(InetAddress.getByName("10.0.1.5"));
        Decision all = p.decide("db.test", 443, at("10.0.0.5"), NOTHING_FORBIDDEN);
        assertThat(all.allowed()).isFalse();
        assertThat(all.reason()).contains("denied_routes");
        Decision forbidden = p.decide("db.test", 443, at("127.0.0.1"), InetAddress::isLoopbackAddress);
        assertThat(forbidden.reason()).contains("no sandbox may reach");
    }

    @Test
    void aRouteAllowsItsAddressesOnItsPortsOnly() throws Exception {
        EgressPolicy p = route(hosts(), "10.1.0.0/16", new PortRange(5432, 5432), new PortRange(8000, 8099));
        assertThat(p.decide("10.1.2.3", 5432, at("10.1.2.3"), NOTHING_FORBIDDEN).allowed())
                .isTrue();
        assertThat(p.decide("10.1.2.3", 8050, at("10.1.2.3"), NOTHING_FORBIDDEN).allowed())
                .isTrue();
        assertThat(p.decide("10.1.2.3", 22, at("10.1.2.3"), NOTHING_FORBIDDEN).reason())
                .contains("no allowed_routes entry covers 10.1.2.3 port 22");
        assertThat(p.decide("db.internal", 5432, at("10.1.9.9", "192.168.1.1"), NOTHING_FORBIDDEN)
                        .addresses())
                .containsExactly(InetAddress.getByName("10.1.9.9"));
        assertThat(p.decide("10.2.0.1", 5432, at("10.2.0.1"), NOTHING_FORBIDDEN).allowed())
                .isFalse();
        EgressPolicy denied = deny(p, "10.1.2.0/24");
        assertThat(denied.decide("10.1.2.3", 5432, at("10.1.2.3"), NOTHING_FORBIDDEN)
                        .allowed())
                .isFalse();
        assertThat(denied.routesTo(InetAddress.getByName("10.1.2.3"))).isFalse();
        assertThat(denied.routesTo(InetAddress.getByName("10.1.3.3"))).isTrue();
    }

    @Test
    void theWholeNetworkRouteIsRecognised() {
        assertThat(new Route(ai.chalk.compute.server.runtime.network.Prefix.parse("0.0.0.0/0"), List.of())
                        .isEverything())
                .isTrue();
        assertThat(new Route(
                                ai.chalk.compute.server.runtime.network.Prefix.parse("0.0.0.0/0"),
                                List.of(new PortRange(443, 443)))
                        .isEverything())
                .isFalse();
    }

    @Test
    void aPolicyPrintsNoSecret() {
        EgressPolicy p = with(hosts(), "api.openai.com", credential("PLACEHOLDER", "sk-very-secret"));
        assertThat(p.toString()).contains("api.openai.com").doesNotContain("sk-very-secret");
        assertThat(p.hosts().get(0).rules().get(0).toString()).doesNotContain("sk-very-secret");
        assertThat(new SecretText("sk-very-secret").toString()).isEqualTo("(hidden)");
    }
}
