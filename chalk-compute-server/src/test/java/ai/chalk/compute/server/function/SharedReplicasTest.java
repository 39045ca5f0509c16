package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.ByteString;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Functions deployed with the same worker (the functions of one bean: same code, same functions served, same
 * settings) run in one set of replicas: one worker JVM answers all of them, whatever each function's own call
 * timeout; a function with settings of its own gets its own replicas; a redeployed function moves to new replicas
 * while the others keep theirs, which stop once no function uses them.
 */
class SharedReplicasTest {

    private static final String BEAN = "greet=t.W#echo,score=t.W#echo,exact=t.W#echo";

    @TempDir
    Path dir;

    private static CreateExternalFunctionVersionRequest request(String name, TestCode code, int minReplicas) {
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName(name)
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                        .setScalingSpec(ScalingSpec.newBuilder()
                                .setMinReplicas(minReplicas)
                                .setMaxReplicas(1)
                                .setShutdownDelaySeconds(60)))
                .setConfig(FunctionConfig.newBuilder()
                        .putOptions("chalk_compute.code", code.manifestDigest)
                        .putOptions("chalk_compute.functions", BEAN)
                        .putOptions("chalk_compute.worker", "plain"))
                .build();
    }

    private static ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog(
            RunningServer s) {
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(s.channel).withDeadlineAfter(90, TimeUnit.SECONDS);
    }

    /** The replica that answered a call of {@code function}: the echo is {@code label|worker id|payload}. */
    private static String replica(RunningServer s, String function) {
        return replica(s, ExternalFunctionVersionKey.newBuilder().setFunctionName(function), function);
    }

    /** The replica that answered a call of version {@code version} of {@code function}. */
    private static String replica(RunningServer s, String function, int version) {
        return replica(
                s,
                ExternalFunctionVersionKey.newBuilder()
                        .setFunctionName(function)
                        .setVersion(version),
                function);
    }

    private static String replica(RunningServer s, ExternalFunctionVersionKey.Builder key, String function) {
        String answer = catalog(s)
                .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(key)
                        .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                .setName(function)
                                .setFeatherStream(ByteString.copyFromUtf8("x")))
                        .build())
                .getRemoteCallResponse()
                .getFeatherStream()
                .toStringUtf8();
        assertThat(answer).endsWith("|x");
        return answer.substring(0, answer.lastIndexOf('|'));
    }

    private static int readyReplicas(RunningServer s, String function) {
        return catalog(s)
                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                        .setFunctionName(function)
                        .setIncludeScalingGroup(true)
                        .build())
                .getScalingGroup()
                .getReadyReplicas();
    }

    @Test
    void functionsOfOneDeploymentShareReplicasUntilTheirSettingsDiffer() throws Exception {
        TestCode code = new TestCode("shared");
        try (RunningServer s = RunningServer.start(dir, b -> b.workerReadyTimeout(Duration.ofSeconds(30)))) {
            code.upload(s.channel);
            catalog(s).createExternalFunctionVersion(request("greet", code, 0));
            catalog(s).createExternalFunctionVersion(request("score", code, 0));
            var exact = request("exact", code, 0).toBuilder();
            exact.getConfigBuilder().putOptions("chalk_compute.timeout", "PT30S"); // a call option: still shared
            catalog(s).createExternalFunctionVersion(exact.build());

            String greet = replica(s, "greet");
            assertThat(greet).startsWith("shared|fnw-");
            assertThat(replica(s, "score")).isEqualTo(greet);
            assertThat(replica(s, "exact")).isEqualTo(greet);
            // each function's scaling group counts the one replica they share
            assertThat(readyReplicas(s, "score")).isEqualTo(1);
            assertThat(readyReplicas(s, "exact")).isEqualTo(1);

            // a function whose replicas are set up differently (one kept warm) runs apart
            TestCode other = new TestCode("apart");
            other.upload(s.channel);
            catalog(s).createExternalFunctionVersion(request("greet", other, 1));
            String moved = replica(s, "greet");
            assertThat(moved).startsWith("apart|fnw-").isNotEqualTo(greet);
            assertThat(replica(s, "score")).isEqualTo(greet); // the others keep the replica they share

            // once no function uses the shared replicas they stop, and the next call starts a fresh one
            catalog(s)
                    .deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                            .setFunctionName("score")
                            .build());
            assertThat(replica(s, "exact")).isEqualTo(greet);
            catalog(s)
                    .deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                            .setFunctionName("exact")
                            .build());
            catalog(s).createExternalFunctionVersion(request("score", code, 0));
            assertThat(replica(s, "score")).startsWith("shared|fnw-").isNotEqualTo(greet);
        }
    }

    @Test
    void replicasACallOfAnOlderVersionStartedStopWhenTheVersionOrTheFunctionIsDeleted() throws Exception {
        TestCode first = new TestCode("first");
        TestCode second = new TestCode("second");
        TestCode third = new TestCode("third");
        try (RunningServer s = RunningServer.start(dir, b -> b.workerReadyTimeout(Duration.ofSeconds(30)))) {
            first.upload(s.channel);
            second.upload(s.channel);
            third.upload(s.channel);
            String v1 = catalog(s)
                    .createExternalFunctionVersion(request("greet", first, 0))
                    .getExternalFunctionVersion()
                    .getId();
            catalog(s).createExternalFunctionVersion(request("greet", second, 0));
            catalog(s).createExternalFunctionVersion(request("greet", third, 0));
            assertThat(replica(s, "greet")).startsWith("third|fnw-");
            // a call may name a version that no longer serves: its replicas are started for it
            String old = replica(s, "greet", 1);
            assertThat(old).startsWith("first|fnw-");
            String older = replica(s, "greet", 2);
            assertThat(older).startsWith("second|fnw-");
            Path run = dir.resolve("functions").resolve("run");
            assertThat(run.resolve(workerId(old))).exists();

            // deleted (its code was bad, say), the version's replicas stop: they would be given the environment's
            // secrets and a live token on every restart
            catalog(s)
                    .deleteExternalFunctionVersion(DeleteExternalFunctionVersionRequest.newBuilder()
                            .setId(v1)
                            .build());
            Awaitility.await()
                    .atMost(Duration.ofSeconds(30))
                    .untilAsserted(() -> assertThat(run.resolve(workerId(old))).doesNotExist());
            assertThat(run.resolve(workerId(older))).exists();
            // and with the function, every version's
            catalog(s)
                    .deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                            .setFunctionName("greet")
                            .build());
            Awaitility.await()
                    .atMost(Duration.ofSeconds(30))
                    .untilAsserted(() -> assertThat(run).isEmptyDirectory());
        }
    }

    /** {@code fnw-...} of {@code label|fnw-...}. */
    private static String workerId(String replica) {
        return replica.substring(replica.indexOf('|') + 1);
    }
}
