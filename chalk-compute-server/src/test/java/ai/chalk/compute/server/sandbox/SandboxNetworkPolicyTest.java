package ai.chalk.compute.server.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.container.v1.AllowedRoute;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.NetworkPolicy;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRule;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRuleList;
import ai.chalk.compute.proto.container.v1.NetworkTransformer;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.proto.server.v1.EnvironmentSecretsServiceGrpc;
import ai.chalk.compute.proto.server.v1.UpsertSecretRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.egress.EgressWorld;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * ChalkContainerSpec.network_policy over the wire, on a real server with the local runtime: the policy's hosts through
 * the egress proxy with a header secret resolved in the caller's environment and a credential placeholder; no policy
 * is no network and {@code allowed_routes ["0.0.0.0/0"]} alone the whole network, as before; v1 keeps refusing
 * per-host rules; malformed policies are INVALID_ARGUMENT naming the field, a missing secret NOT_FOUND; and the
 * secret's value appears in no response, error or log line.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SandboxNetworkPolicyTest {

    private static final String SECRET = "sk-wire-0d9b1c7e55";
    private static final String PLACEHOLDER = "CHALK_PLACEHOLDER_OPENAI_API_KEY";

    @TempDir
    static Path dataDir;

    private EgressWorld world;
    private RunningServer server;
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final List<String> seen = new ArrayList<>();

    @BeforeAll
    void start() throws Exception {
        logs.start();
        root().addAppender(logs);
        ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger("ai.chalk.compute.server.egress"))
                .setLevel(Level.DEBUG);
        world = EgressWorld.start();
        server = RunningServer.start(dataDir, b -> b.egress(world.options()));
        EnvironmentSecretsServiceGrpc.newBlockingStub(server.channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .upsertSecret(UpsertSecretRequest.newBuilder()
                        .setName("OPENAI_API_KEY")
                        .setValue(SECRET)
                        .build());
        EnvironmentSecretsServiceGrpc.newBlockingStub(server.channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .upsertSecret(UpsertSecretRequest.newBuilder()
                        .setName("TWO_LINES")
                        .setValue("a\nb")
                        .build());
    }

    @AfterAll
    void stop() throws Exception {
        try {
            assertThat(seen).noneMatch(s -> s.contains(SECRET));
            assertThat(logs.list).noneMatch(e -> e.getFormattedMessage().contains(SECRET));
            assertThat(logs.list).anyMatch(e -> e.getFormattedMessage().contains("egress refused"));
        } finally {
            root().detachAppender(logs);
            server.close();
            world.close();
        }
    }

    private static ch.qos.logback.classic.Logger root() {
        return (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("ROOT");
    }

    private String create(ChalkContainerSpec spec) {
        var created = server.sandboxesV2()
                .createSandbox(CreateSandboxRequest.newBuilder().setSpec(spec).build())
                .getSandbox();
        seen.add(created.toString());
        return created.getId();
    }

    private String sh(String id, String script) {
        var r = server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(id)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script)
                        .build());
        String out = r.getStdout().toStringUtf8() + r.getStderr().toStringUtf8();
        seen.add(out);
        return out;
    }

    private void terminate(String id) {
        server.sandboxesV2()
                .terminateSandbox(TerminateSandboxRequest.newBuilder().setId(id).build());
    }

    private Status status(Supplier<?> call) {
        StatusRuntimeException e = catchThrowableOfType(call::get, StatusRuntimeException.class);
        assertThat(e).as("the call fails").isNotNull();
        seen.add(String.valueOf(e.getStatus().getDescription()));
        return e.getStatus();
    }

    private static NetworkPolicy.Builder credentialPolicy() {
        return NetworkPolicy.newBuilder()
                .putAllowedHosts(
                        "api.allowed.test",
                        NetworkPolicyRuleList.newBuilder()
                                .addRules(NetworkPolicyRule.newBuilder()
                                        .addTransform(NetworkTransformer.newBuilder()
                                                .putHeadersSecrets(
                                                        NetworkPolicies.PLACEHOLDER_PREFIX + PLACEHOLDER,
                                                        "OPENAI_API_KEY")
                                                .putHeaders("X-Team", "blue")))
                                .build())
                .putAllowedHosts("other.test", NetworkPolicyRuleList.getDefaultInstance());
    }

    @Test
    void aPolicyOverTheWireReachesItsHostsWithTheSecretInHeadersOnly() throws Exception {
        String id = create(ChalkContainerSpec.newBuilder()
                .putEnvVars("OPENAI_API_KEY", PLACEHOLDER)
                .setNetworkPolicy(credentialPolicy())
                .build());
        try {
            assertThat(sh(id, "curl -sS -H \"Authorization: Bearer $OPENAI_API_KEY\" https://api.allowed.test/wire"))
                    .contains("\"ok\": true");
            assertThat(sh(id, "curl -sS -o /dev/null -w '%{http_code}' http://evil.test/"))
                    .isEqualTo("403");
            // the same request in the clear: its secret would cross the network readable, so it is refused, never sent
            assertThat(sh(id, "curl -sS -H \"Authorization: Bearer $OPENAI_API_KEY\" http://api.allowed.test/clear"))
                    .contains("only sent over TLS");
            assertThat(world.receivedFor("api.allowed.test"))
                    .noneMatch(x -> x.get("path").asText().equals("/clear"));
            JsonNode r = world.receivedFor("api.allowed.test").stream()
                    .filter(x -> x.get("path").asText().equals("/wire"))
                    .findFirst()
                    .orElseThrow();
            assertThat(r.get("headers").toString())
                    .contains("\"Authorization\",\"Bearer " + SECRET + "\"")
                    .contains("\"X-Team\",\"blue\"");
            assertThat(sh(id, "env | grep -c " + SECRET + "; cat /proc/1/environ | grep -c " + SECRET))
                    .isEqualTo("0\n0\n");
        } finally {
            terminate(id);
        }
    }

    @Test
    void noPolicyIsNoNetworkAndTheWholeNetworkRouteIsTheWholeNetwork() {
        String none = create(ChalkContainerSpec.getDefaultInstance());
        String empty = create(ChalkContainerSpec.newBuilder()
                .setNetworkPolicy(NetworkPolicy.getDefaultInstance())
                .build());
        String all = create(ChalkContainerSpec.newBuilder()
                .setNetworkPolicy(NetworkPolicy.newBuilder()
                        .addAllowedRoutes(AllowedRoute.newBuilder().setRoute("0.0.0.0/0")))
                .build());
        // all of IPv6 is not all of IPv4: it was, the whole network of slirp4netns
        String v6 = create(ChalkContainerSpec.newBuilder()
                .setNetworkPolicy(NetworkPolicy.newBuilder()
                        .addAllowedRoutes(AllowedRoute.newBuilder().setRoute("::/0")))
                .build());
        try {
            for (String id : List.of(none, empty)) {
                assertThat(sh(id, "cat /proc/net/dev; echo HTTP_PROXY=$HTTP_PROXY"))
                        .contains("lo:")
                        .doesNotContain("egress0", "tap0", "HTTP_PROXY=http");
            }
            assertThat(sh(all, "cat /proc/net/dev; echo HTTP_PROXY=$HTTP_PROXY"))
                    .contains("tap0")
                    .doesNotContain("egress0", "HTTP_PROXY=http");
            assertThat(sh(v6, "cat /proc/net/dev; echo HTTP_PROXY=$HTTP_PROXY"))
                    .contains("egress0", "HTTP_PROXY=http")
                    .doesNotContain("tap0");
        } finally {
            List.of(none, empty, all, v6).forEach(this::terminate);
        }
    }

    @Test
    void v1KeepsRefusingPerHostRules() {
        Status s = status(() -> server.sandboxes()
                .createSandbox(ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest.newBuilder()
                        .setNetworkPolicy(credentialPolicy())
                        .build()));
        assertThat(s.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(s.getDescription()).contains("chalk.sandbox.v2");
    }

    @Test
    void malformedPoliciesAndMissingSecretsAreRefusedNamingTheField() {
        Status cidr = status(() -> create(ChalkContainerSpec.newBuilder()
                .setNetworkPolicy(NetworkPolicy.newBuilder()
                        .addAllowedRoutes(AllowedRoute.newBuilder().setRoute("10.0.0.0/33")))
                .build()));
        assertThat(cidr.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(cidr.getDescription()).contains("network_policy.allowed_routes[0].route \"10.0.0.0/33\"");
        Status host = status(() -> create(ChalkContainerSpec.newBuilder()
                .setNetworkPolicy(NetworkPolicy.newBuilder()
                        .putAllowedHosts("api.*.com", NetworkPolicyRuleList.getDefaultInstance()))
                .build()));
        assertThat(host.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(host.getDescription()).contains("network_policy.allowed_hosts[\"api.*.com\"]");
        Status missing = status(() -> create(ChalkContainerSpec.newBuilder()
                .setNetworkPolicy(NetworkPolicy.newBuilder()
                        .putAllowedHosts(
                                "api.allowed.test",
                                NetworkPolicyRuleList.newBuilder()
                                        .addRules(NetworkPolicyRule.newBuilder()
                                                .addTransform(NetworkTransformer.newBuilder()
                                                        .putHeadersSecrets("Authorization", "NOPE")))
                                        .build()))
                .build()));
        assertThat(missing.getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(missing.getDescription()).contains("NOPE", "headers_secrets[\"Authorization\"]");
        Status lines = status(() -> create(ChalkContainerSpec.newBuilder()
                .setNetworkPolicy(NetworkPolicy.newBuilder()
                        .putAllowedHosts(
                                "api.allowed.test",
                                NetworkPolicyRuleList.newBuilder()
                                        .addRules(NetworkPolicyRule.newBuilder()
                                                .addTransform(NetworkTransformer.newBuilder()
                                                        .putHeadersSecrets("X-Key", "TWO_LINES")))
                                        .build()))
                .build()));
        assertThat(lines.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(lines.getDescription())
                .contains("the secret TWO_LINES contains a line break")
                .doesNotContain("a\nb");
    }
}
