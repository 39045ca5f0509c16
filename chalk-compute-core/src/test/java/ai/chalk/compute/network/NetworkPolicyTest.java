package ai.chalk.compute.network;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.FunctionDefinitionException;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRule;
import ai.chalk.compute.secret.Secret;
import ai.chalk.compute.secret.SecretsClient;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Network policies as users write them, checked as they are written and said in the spec's words. */
class NetworkPolicyTest {

    /** Compiling policies of Chalk secrets only never calls the server: nothing answers here. */
    private final ManagedChannel nowhere =
            InProcessChannelBuilder.forName("no-server-" + System.nanoTime()).build();

    private final SecretsClient secrets = new SecretsClient(nowhere);

    @AfterEach
    void close() {
        nowhere.shutdownNow();
    }

    @Test
    void aPolicyIsCheckedAsItIsWritten() {
        assertThatThrownBy(() -> NetworkPolicy.allowlist("api.*.com")).hasMessageContaining("*. wildcard");
        assertThatThrownBy(() -> NetworkPolicy.none().deny("not-a-prefix"))
                .hasMessageContaining("IP address or prefix");
        assertThatThrownBy(() -> NetworkPolicy.none().allowRoute("10.0.0.0/8", 443, 80))
                .hasMessageContaining("port range");
        assertThatThrownBy(() -> NetworkRule.header("X-Key", "a\r\nInjected: yes"))
                .hasMessageContaining("line break");
        assertThatThrownBy(() -> NetworkRule.header("Bad Header", "v")).hasMessageContaining("not an HTTP header name");
        assertThatThrownBy(() -> NetworkRule.forward("ftp://x")).hasMessageContaining("http:// or https://");
        assertThatThrownBy(() -> new Credential(List.of("api.x.com"), Secret.fromChalkIntegration("pg", "PASSWORD")))
                .hasMessageContaining("Secret.fromChalkEnv");
        assertThatThrownBy(() -> new Credential(List.of(), Secret.fromChalkEnv("K")))
                .hasMessageContaining("host");
        assertThat(NetworkRule.header("X-Key", "literal-value").toString()).doesNotContain("literal-value");
    }

    @Test
    void aPolicyAndItsCredentialsBecomeTheSpecsNetworkPolicy() {
        NetworkPolicy policy = NetworkPolicy.allowlist("pypi.org")
                .allowRoute("10.1.0.0/16", 5432, 5432)
                .deny("10.1.2.0/24")
                .rule(
                        "api.openai.com",
                        NetworkRule.headerFromSecret("Authorization", Secret.fromChalkEnv("OPENAI_BEARER"))
                                .withHeader("OpenAI-Organization", "org-acme")
                                .when(RequestMatch.pathStartsWith("/v1/").withMethods("post")));
        NetworkSpecs.Compiled c = NetworkSpecs.compile(
                policy,
                List.of(new Credential(List.of("api.slack.com", "*.slack.com"), Secret.fromChalkEnv("SLACK"))),
                secrets);
        var proto = c.policy().orElseThrow();
        assertThat(proto.getAllowedRoutes(0).getRoute()).isEqualTo("10.1.0.0/16");
        assertThat(proto.getAllowedRoutes(0).getPortRanges(0).getStartPort()).isEqualTo(5432);
        assertThat(proto.getDeniedRoutesList()).containsExactly("10.1.2.0/24");
        assertThat(proto.getAllowedHostsMap())
                .containsOnlyKeys("pypi.org", "api.openai.com", "api.slack.com", "*.slack.com");
        NetworkPolicyRule openai =
                proto.getAllowedHostsMap().get("api.openai.com").getRules(0);
        assertThat(openai.getTransform(0).getHeadersSecretsMap()).containsEntry("Authorization", "OPENAI_BEARER");
        assertThat(openai.getTransform(0).getHeadersMap()).containsEntry("OpenAI-Organization", "org-acme");
        assertThat(openai.getMatch().getPath().getStartsWith()).isEqualTo("/v1/");
        assertThat(openai.getMatch().getMethodList()).containsExactly("POST");
        assertThat(proto.getAllowedHostsMap()
                        .get("*.slack.com")
                        .getRules(0)
                        .getTransform(0)
                        .getHeadersSecretsMap())
                .containsExactly(java.util.Map.entry("placeholder:CHALK_PLACEHOLDER_SLACK", "SLACK"));
        assertThat(c.env()).containsExactly(java.util.Map.entry("SLACK", "CHALK_PLACEHOLDER_SLACK"));
        assertThat(c.managedSecrets())
                .containsExactly(Secret.fromChalkEnv("OPENAI_BEARER"), Secret.fromChalkEnv("SLACK"));
        assertThat(NetworkSpecs.compile(null, List.of(), secrets)).isEqualTo(NetworkSpecs.Compiled.NONE);
        assertThat(NetworkSpecs.compile(NetworkPolicy.all(), List.of(), secrets)
                        .policy()
                        .orElseThrow()
                        .getAllowedRoutesList())
                .extracting(r -> r.getRoute())
                .containsExactly("0.0.0.0/0");
    }

    /** Functions whose annotations say what they may reach, in code_sandboxes' words. */
    static class Fetchers {
        @ChalkFunction(
                network = "allowlist",
                allowedHosts = {"pypi.org", "*.pythonhosted.org"},
                credentials = {"api.openai.com,*.openai.com=OPENAI_API_KEY"})
        public static String fetch(String url) {
            return url;
        }

        @ChalkFunction(network = "all")
        public static String open(String url) {
            return url;
        }

        @ChalkFunction
        public static String offline(String url) {
            return url;
        }
    }

    static class Broken {
        @ChalkFunction(network = "none", allowedHosts = "pypi.org")
        public static String fetch(String url) {
            return url;
        }
    }

    @Test
    void functionsDeclareTheirNetworkInCodeSandboxesWords() {
        FunctionRegistry registry = new FunctionRegistry();
        registry.register(Fetchers.class);
        var fetch = registry.get("fetch").definition().deployment();
        assertThat(fetch.network()).contains(NetworkPolicy.allowlist("pypi.org", "*.pythonhosted.org"));
        assertThat(fetch.credentials())
                .containsExactly(new Credential(
                        List.of("api.openai.com", "*.openai.com"), Secret.fromChalkEnv("OPENAI_API_KEY")));
        assertThat(registry.get("open").definition().deployment().network()).contains(NetworkPolicy.all());
        assertThat(registry.get("offline").definition().deployment().network()).isEmpty();
        assertThatThrownBy(() -> new FunctionRegistry().register(Broken.class))
                .isInstanceOf(FunctionDefinitionException.class)
                .hasMessageContaining("allowedHosts needs network \"allowlist\"");
    }
}
