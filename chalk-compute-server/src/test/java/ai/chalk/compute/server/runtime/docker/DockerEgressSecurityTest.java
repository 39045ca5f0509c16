package ai.chalk.compute.server.runtime.docker;

import static ai.chalk.compute.server.egress.Policies.credential;
import static ai.chalk.compute.server.egress.Policies.hosts;
import static ai.chalk.compute.server.egress.Policies.with;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.egress.EgressPolicy;
import ai.chalk.compute.server.egress.EgressWorld;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A sandbox with a network policy on the docker runtime (busybox: wget, nc, nslookup): its own internal network whose
 * only peer is the egress proxy at the gateway. What the policy allows works through the proxy and without the proxy
 * variables; other hosts, direct connections, UDP, IPv6 and names outside the policy go nowhere; a credential is the
 * secret only in headers to its host, and the container never holds it. The destinations are servers in a network
 * namespace of the test's own ({@link EgressWorld}).
 */
@Tag("alone")
class DockerEgressSecurityTest {

    private static final String SECRET = "sk-live-docker-77e1c0a9";
    private static final String PLACEHOLDER = "CHALK_PLACEHOLDER_API_KEY";

    private static EgressWorld world;
    private static Path state;
    private static DockerRuntime runtime;
    private final List<RuntimeSandbox> sandboxes = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        world = EgressWorld.start();
        state = Files.createTempDirectory("chalk-docker-egress");
        runtime = DockerRuntime.builder(state)
                .defaultImage(DockerTesting.image())
                .egress(world.options())
                .build();
    }

    @AfterAll
    static void stop() {
        if (runtime != null) {
            runtime.close();
        }
        if (world != null) {
            world.close();
        }
    }

    @BeforeEach
    void forget() throws Exception {
        world.clear();
    }

    @AfterEach
    void terminate() {
        sandboxes.forEach(s -> s.terminate(Duration.ZERO));
    }

    private RuntimeSandbox start(EgressPolicy policy, Map<String, String> env) throws Exception {
        RuntimeSandbox s = runtime.start(
                new SandboxSpec(RuntimeTesting.newId(), "", env, "/", ResourceLimits.NONE, false, List.of())
                        .withEgress(policy));
        sandboxes.add(s);
        return s;
    }

    private static String sh(RuntimeSandbox s, String script) throws Exception {
        RuntimeTesting.Run r = RuntimeTesting.sh(s, script);
        return r.out() + r.err();
    }

    @Test
    void whatThePolicyAllowsWorksAndNothingElseGoesAnywhere() throws Exception {
        RuntimeSandbox s = start(hosts("api.allowed.test", "other.test"), Map.of());
        String proxy = sh(s, "echo ${http_proxy#http://} | cut -d: -f1").strip();
        assertThat(proxy).matches("10\\.199\\.[0-9]+\\.[0-9]+");
        assertThat(sh(s, "wget -q -O - http://api.allowed.test/plain; echo exit=$?"))
                .contains("\"path\": \"/plain\"", "exit=0");
        assertThat(sh(s, "wget -q -O - --no-check-certificate https://other.test/tls; echo exit=$?"))
                .contains("\"sni\": \"other.test\"", "exit=0");
        assertThat(sh(s, "wget -S -O - http://evil.test/ 2>&1; echo exit=$?"))
                .contains("403")
                .doesNotContain("exit=0");
        assertThat(sh(s, "wget -q -O - --no-check-certificate https://evil.test/ 2>&1; echo exit=$?"))
                .doesNotContain("exit=0");
        // without the proxy variables: allowed names resolve to the proxy, others not at all
        assertThat(sh(s, "wget -Y off -q -O - http://api.allowed.test/direct; echo exit=$?"))
                .contains("\"path\": \"/direct\"", "exit=0");
        assertThat(sh(s, "nslookup api.allowed.test 2>&1")).contains(proxy);
        assertThat(sh(s, "nslookup evil.test 2>&1; echo exit=$?")).doesNotContain("exit=0");
        // the engine's own resolver on the sandbox's network, which engines before 23.0.11 (CVE-2024-29018) let forward
        // through the host's resolver: it answered the container's own name, and would have resolved any name
        assertThat(sh(s, "nslookup " + DockerRuntime.containerName(s.id()) + " 127.0.0.11 2>&1; echo exit=$?"))
                .doesNotContain("exit=0");
        // direct connections, to the world, the host and the proxy's other ports, fail; UDP goes nowhere
        for (String target : List.of(
                world.farA.getHostAddress() + " 80",
                world.hostEnd.getHostAddress() + " 80",
                proxy + " 22",
                proxy + " 8080",
                "169.254.169.254 80")) {
            assertThat(sh(s, "echo probe | nc -w 3 " + target + " >/dev/null 2>&1 && echo CONNECTED || echo REFUSED"))
                    .as(target)
                    .contains("REFUSED");
        }
        sh(
                s,
                "echo leak | nc -u -w 2 " + world.farA.getHostAddress() + " 5353; echo leak | nc -u -w 2 " + proxy
                        + " 5353; true");
        assertThat(sh(s, "cat /proc/net/if_inet6")).doesNotContain("eth0");
        assertThat(sh(s, "echo probe | nc -w 3 " + world.farV6.getHostAddress() + " 80 && echo CONNECTED || echo NO"))
                .contains("NO");
        assertThat(world.received()).noneMatch(r -> r.has("udp"));
        assertThat(world.receivedFor("evil.test")).isEmpty();
        assertThat(sh(s, "grep -c 'BEGIN CERTIFICATE' /chalk/egress/ca.pem; cat /etc/resolv.conf"))
                .contains("1\n", "nameserver " + proxy);
    }

    @Test
    void aCredentialIsTheSecretOnlyInHeadersToItsHostAndTheContainerNeverHoldsIt() throws Exception {
        EgressPolicy policy = with(hosts("other.test"), "api.allowed.test", credential(PLACEHOLDER, SECRET));
        RuntimeSandbox s = start(policy, Map.of("API_KEY", PLACEHOLDER));
        assertThat(
                        sh(
                                s,
                                "wget -q -O - --no-check-certificate --header \"Authorization: Bearer $API_KEY\""
                                        + " \"https://api.allowed.test/tls?k=$API_KEY\"; wget -q -O - --no-check-certificate"
                                        + " --header \"Authorization: Bearer $API_KEY\" https://other.test/unlisted; echo exit=$?"))
                .contains("exit=0")
                .doesNotContain(SECRET);
        // over plain HTTP the credential would cross the network readable: that request is refused, never sent
        assertThat(sh(
                        s,
                        "wget -q -O - --header \"Authorization: Bearer $API_KEY\" http://api.allowed.test/plain 2>&1;"
                                + " echo exit=$?"))
                .contains("403")
                .doesNotContain("exit=0");
        assertThat(authorization(world.receivedFor("api.allowed.test"))).containsExactly("Bearer " + SECRET);
        assertThat(world.receivedFor("api.allowed.test").get(0).get("path").asText())
                .isEqualTo("/tls?k=" + PLACEHOLDER);
        assertThat(authorization(world.receivedFor("other.test"))).containsExactly("Bearer " + PLACEHOLDER);
        assertThat(sh(s, "env; cat /proc/[0-9]*/environ | tr '\\0' '\\n'; grep -rs sk-live /chalk /etc /tmp; true"))
                .contains(PLACEHOLDER)
                .doesNotContain(SECRET);
    }

    @Test
    void aRestartedServerDoesNotAdoptASandboxWhoseProxyIsGone() throws Exception {
        Path own = Files.createTempDirectory("chalk-docker-egress-restart");
        DockerRuntime first = DockerRuntime.builder(own)
                .defaultImage(DockerTesting.image())
                .egress(world.options())
                .build();
        RuntimeSandbox s = first.start(
                new SandboxSpec(RuntimeTesting.newId(), "", Map.of(), "/", ResourceLimits.NONE, false, List.of())
                        .withEgress(hosts("api.allowed.test")));
        String network = "chalk-egress-" + s.id();
        assertThat(DockerTesting.docker("network", "inspect", network).code()).isZero();
        first.abandon(); // as a crashed server: the container and its network stay, the proxy is gone
        try (DockerRuntime second = DockerRuntime.builder(own)
                .defaultImage(DockerTesting.image())
                .egress(world.options())
                .build()) {
            assertThat(second.reconcile(List.of(s.id()))).isEmpty();
            assertThat(DockerTesting.docker("network", "inspect", network).code())
                    .isNotZero();
            assertThat(DockerTesting.docker(
                                    "ps",
                                    "-a",
                                    "--filter",
                                    "label=" + DockerRuntime.LABEL_SANDBOX + "=" + s.id(),
                                    "--format",
                                    "{{.ID}}")
                            .output()
                            .strip())
                    .isEmpty();
        }
    }

    private static List<String> authorization(List<JsonNode> requests) {
        List<String> values = new ArrayList<>();
        for (JsonNode r : requests) {
            for (JsonNode h : r.get("headers")) {
                if (h.get(0).asText().equalsIgnoreCase("authorization")) {
                    values.add(h.get(1).asText());
                }
            }
        }
        return values;
    }
}
