package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.NetworkPolicy;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRule;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRuleList;
import ai.chalk.compute.proto.container.v1.NetworkTransformer;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.proto.server.v1.EnvironmentSecretsServiceGrpc;
import ai.chalk.compute.proto.server.v1.UpsertSecretRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.egress.EgressWorld;
import ai.chalk.compute.server.sandbox.NetworkPolicies;
import com.google.protobuf.ByteString;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A function's network policy holds for its replicas as for a sandbox: Java's own HTTP client in the worker reaches
 * the allowed host through the egress proxy (the JVM options in JAVA_TOOL_OPTIONS), with the credential placeholder
 * replaced by the secret on the way, and any other host is refused.
 */
class FunctionNetworkPolicyTest {

    @Test
    void aFunctionReachesOnlyItsAllowedHostWithTheSecretAddedOnTheWay(@TempDir Path dir) throws Exception {
        String secret = "sk-function-5e2a90";
        String placeholder = "CHALK_PLACEHOLDER_API_KEY";
        try (EgressWorld world = EgressWorld.start();
                RunningServer server = RunningServer.start(
                        dir, b -> b.workerReadyTimeout(Duration.ofSeconds(60)).egress(world.options()))) {
            EnvironmentSecretsServiceGrpc.newBlockingStub(server.channel)
                    .upsertSecret(UpsertSecretRequest.newBuilder()
                            .setName("API_KEY")
                            .setValue(secret)
                            .build());
            var catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(server.channel)
                    .withDeadlineAfter(120, TimeUnit.SECONDS);
            TestCode code = new TestCode("network");
            code.upload(server.channel);
            catalog.createExternalFunctionVersion(CreateExternalFunctionVersionRequest.newBuilder()
                    .setFunctionName("fetcher")
                    .setSpec(ScalingGroupSpec.newBuilder()
                            .setContainerSpec(ChalkContainerSpec.newBuilder()
                                    .putEnvVars("API_KEY", placeholder)
                                    .setNetworkPolicy(NetworkPolicy.newBuilder()
                                            .putAllowedHosts(
                                                    "api.allowed.test",
                                                    NetworkPolicyRuleList.newBuilder()
                                                            .addRules(NetworkPolicyRule.newBuilder()
                                                                    .addTransform(NetworkTransformer.newBuilder()
                                                                            .putHeadersSecrets(
                                                                                    NetworkPolicies.PLACEHOLDER_PREFIX
                                                                                            + placeholder,
                                                                                    "API_KEY")))
                                                            .build())))
                            .setScalingSpec(
                                    ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(1)))
                    .setConfig(FunctionConfig.newBuilder()
                            .putOptions("chalk_compute.code", code.manifestDigest)
                            .putOptions("chalk_compute.functions", "fetch=t.W#fetch")
                            .putOptions("chalk_compute.worker", "plain"))
                    .build());
            assertThat(fetch(catalog, "https://api.allowed.test/from-function")).contains("|200 {");
            assertThat(fetch(catalog, "http://evil.test/")).contains("|403 ").contains("network policy");
            // the credential goes only over TLS: over plain HTTP the request is refused, never sent
            assertThat(fetch(catalog, "http://api.allowed.test/in-the-clear"))
                    .contains("|403 ")
                    .contains("only sent over TLS");
            var received = world.receivedFor("api.allowed.test");
            assertThat(received).hasSize(1);
            assertThat(received.get(0).get("path").asText()).isEqualTo("/from-function");
            assertThat(received.get(0).get("headers").toString()).contains("Bearer " + secret);
        }
    }

    private static String fetch(
            ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog, String url) {
        return catalog.callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName("fetcher"))
                        .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                .setName("fetch")
                                .setFeatherStream(ByteString.copyFromUtf8(url)))
                        .build())
                .getRemoteCallResponse()
                .getFeatherStream()
                .toStringUtf8();
    }
}
