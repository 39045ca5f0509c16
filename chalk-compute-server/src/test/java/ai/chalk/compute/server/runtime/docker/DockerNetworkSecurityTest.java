package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Finding 14 as attacks: sandboxes granted the network try to reach each other and services of the host bound to
 * every address ({@code 0.0.0.0}), through the gateway and through each of the host's own addresses.
 */
@Tag("alone")
class DockerNetworkSecurityTest extends DockerTesting.WithRuntime {

    private RuntimeSandbox networked() throws Exception {
        return runtime.start(
                new SandboxSpec(RuntimeTesting.newId(), "", Map.of(), "/", ResourceLimits.NONE, true, List.of()));
    }

    /** Whether a TCP connection from inside the sandbox to {@code address:port} succeeds within 3 s. */
    private static boolean connects(RuntimeSandbox sb, String address, int port) throws Exception {
        String out = RuntimeTesting.sh(
                        sb,
                        "echo probe | nc -w 3 " + address + " " + port
                                + " >/dev/null 2>&1 && echo CONNECTED || echo REFUSED")
                .out();
        return out.contains("CONNECTED");
    }

    @Test
    void twoSandboxesWithTheNetworkCannotReachEachOther() throws Exception {
        RuntimeSandbox listener = networked();
        RuntimeSandbox intruder = networked();
        RuntimeProcess server = listener.exec(RuntimeTesting.sh("nc -l -p 7311 > /tmp/got; echo done"));
        String address = RuntimeTesting.sh(listener, "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1")
                .ok()
                .out()
                .strip();
        assertThat(address).matches("\\d+\\.\\d+\\.\\d+\\.\\d+");
        // the listener really listens: from inside its own sandbox, its address answers
        RuntimeProcess selfCheck = listener.exec(RuntimeTesting.sh("echo self | nc -w 3 " + address + " 7311"));
        RuntimeTesting.collect(selfCheck);
        assertThat(RuntimeTesting.collect(server).out()).isEqualTo("done\n");
        assertThat(RuntimeTesting.sh(listener, "cat /tmp/got").ok().out()).isEqualTo("self\n");

        listener.exec(RuntimeTesting.sh("nc -l -p 7312 > /tmp/got2"));
        assertThat(connects(intruder, address, 7312))
                .as("another sandbox reaching %s:7312", address)
                .isFalse();
        assertThat(RuntimeTesting.sh(listener, "cat /tmp/got2").out()).isEmpty();
    }

    @Test
    void aSandboxWithTheNetworkReachesNoServiceOfTheHost() throws Exception {
        try (HostService host = new HostService("")) {
            int port = host.port();
            List<String> addresses = HostService.hostAddresses();
            // the service is real: the host itself reaches it on each address
            for (String a : addresses) {
                try (Socket s = new Socket(a, port)) {
                    assertThat(s.isConnected()).isTrue();
                }
            }
            Thread.sleep(200);
            int fromHost = host.accepted();
            assertThat(fromHost).isEqualTo(addresses.size());

            RuntimeSandbox sb = networked();
            // it is networked: an interface besides loopback, and a default route
            assertThat(RuntimeTesting.sh(sb, "ip -4 -o addr show eth0").ok().out())
                    .contains("inet ");
            String route = RuntimeTesting.sh(sb, "ip route").ok().out();
            assertThat(route).contains("default via");
            String gateway = route.lines()
                    .filter(l -> l.startsWith("default via"))
                    .findFirst()
                    .orElseThrow()
                    .split("\\s+")[2];
            List<String> targets = new ArrayList<>(addresses);
            targets.add(gateway);
            for (String target : targets) {
                assertThat(connects(sb, target, port))
                        .as("the sandbox reaching the host's %s:%d", target, port)
                        .isFalse();
            }
            assertThat(connects(sb, "169.254.169.254", 80))
                    .as("the cloud metadata address")
                    .isFalse();
            assertThat(host.accepted())
                    .as("connections the host's service accepted from the sandbox")
                    .isEqualTo(fromHost);
        }
        // the rules that keep it so are in the host's firewall
        for (NetworkFence.Rule r : NetworkFence.RULES) {
            List<String> check = new ArrayList<>(List.of("iptables", "-t", r.table(), "-C", r.chain()));
            check.addAll(r.spec());
            assertThat(DockerTesting.run(check).code())
                    .as(String.join(" ", check))
                    .isZero();
        }
        assertThat(runtime.isolation().detail()).contains("cannot reach each other, the host's addresses");
    }

    @Test
    void aPortAnotherContainerPublishesOnTheHostIsOutOfReach() throws Exception {
        DockerTesting.Result started = DockerTesting.docker(
                "run", "-d", "-p", "0:8080", DockerTesting.image(), "httpd", "-f", "-p", "8080", "-h", "/etc");
        assertThat(started.code()).as(started.output()).isZero();
        String other = started.output().strip();
        try {
            String port = DockerTesting.docker("port", other, "8080/tcp")
                    .output()
                    .lines()
                    .findFirst()
                    .orElseThrow()
                    .replaceAll(".*:", "")
                    .strip();
            String direct = DockerTesting.docker("inspect", "-f", "{{.NetworkSettings.IPAddress}}", other)
                    .output()
                    .strip();
            RuntimeSandbox sb = networked();
            for (String address : HostService.hostAddresses()) {
                // the host reaches the published port: it is real
                try (var in = java.net
                        .URI
                        .create("http://" + address + ":" + port + "/passwd")
                        .toURL()
                        .openStream()) {
                    assertThat(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8))
                            .contains("root:");
                }
                assertThat(connects(sb, address, Integer.parseInt(port)))
                        .as("%s:%s", address, port)
                        .isFalse();
            }
            assertThat(connects(sb, direct, 8080))
                    .as("the other container at %s", direct)
                    .isFalse();
        } finally {
            DockerTesting.docker("rm", "-f", other);
        }
    }
}
