package ai.chalk.compute.server.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.ChalkWorkloadIdentity;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.LocalRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.RuntimeOptions;
import ai.chalk.compute.server.function.TestCode;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import ai.chalk.compute.server.runtime.local.SandboxDefaults;
import com.google.protobuf.ByteString;
import com.google.protobuf.util.Durations;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A tenant creates sandboxes until the server is full: before, sandboxes counted server-wide only, so one environment
 * took all of them and every other environment's create was refused until it let go. One environment now runs at most
 * half; a sandbox's place is given back before its end is answered, whether it was terminated or its lifetime ran out.
 * The count is the server's, above the runtimes: both are run. A function's replicas count among their environment's
 * sandboxes too.
 */
@Tag("alone")
class SandboxSharesSecurityTest {

    @ParameterizedTest
    @ValueSource(strings = {"local", "docker"})
    void oneEnvironmentRunsAtMostHalfTheServersSandboxes(String runtime, @TempDir Path dataDir) throws Exception {
        SandboxDefaults d = SandboxDefaults.STANDARD;
        RuntimeOptions options = runtime.equals("docker")
                ? DockerRuntimeOptions.builder()
                        .defaultImage(DockerTesting.image())
                        .maxSandboxes(4)
                        .build()
                : LocalRuntimeOptions.builder()
                        .defaults(new SandboxDefaults(d.memoryBytes(), d.layerBytes(), d.pidsMax(), d.openFiles(), 4))
                        .poolSize(0)
                        .build();
        try (RunningServer server = RunningServer.start(dataDir, b -> b.runtime(options));
                Tenants tenants = Tenants.of(server)) {
            assertThat(server.server.runtimeName()).isEqualTo(runtime);
            ManagedChannel dev = tenants.dev();
            ManagedChannel prod = tenants.prod();
            String first = tenants.devAtItsShare();
            StatusRuntimeException refused = catchThrowableOfType(() -> create(dev), StatusRuntimeException.class);
            assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(refused.getStatus().getDescription())
                    .contains("this environment runs 2 sandboxes at once, the most one environment may (half of"
                            + " the 4 the server runs): terminate one first");
            // a refused create that asked for a workload identity leaves no token behind
            long identities = identities(dataDir);
            StatusRuntimeException withIdentity = catchThrowableOfType(
                    () -> sandboxes(dev)
                            .createSandbox(CreateSandboxRequest.newBuilder()
                                    .setSpec(ChalkContainerSpec.newBuilder()
                                            .setChalkWorkloadIdentity(ChalkWorkloadIdentity.getDefaultInstance()))
                                    .build()),
                    StatusRuntimeException.class);
            assertThat(withIdentity.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(identities(dataDir)).isEqualTo(identities);

            // the other half is the other environments'
            String prodFirst = create(prod);
            create(prod);

            // a place is free as soon as the terminate answers: creates made on that answer, many in a row
            String last = first;
            for (int i = 0; i < 10; i++) {
                terminate(dev, last);
                last = create(dev);
            }

            // and as soon as a sandbox is seen to have ended by its lifetime running out
            terminate(prod, prodFirst);
            String brief = sandboxes(prod)
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .setSpec(ChalkContainerSpec.newBuilder().setLifetime(Durations.fromMillis(500)))
                            .build())
                    .getSandbox()
                    .getId();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> sandboxes(prod)
                            .getSandbox(
                                    GetSandboxRequest.newBuilder().setId(brief).build())
                            .getSandbox()
                            .getStatusMessage()
                            .contains("ran out"));
            create(prod);
        }
    }

    /**
     * A tenant at its share deploys a function and calls it: its replicas started on the runtime past the share,
     * counted in the server's limit only, so that the tenant filled the rest of the server with replicas. A replica
     * now takes its place among its environment's sandboxes, and gives it back when it stops.
     */
    @Test
    void aReplicaCountsAmongItsEnvironmentsSandboxes(@TempDir Path dataDir) throws Exception {
        SandboxDefaults d = SandboxDefaults.STANDARD;
        LocalRuntimeOptions options = LocalRuntimeOptions.builder()
                .defaults(new SandboxDefaults(d.memoryBytes(), d.layerBytes(), d.pidsMax(), d.openFiles(), 4))
                .poolSize(0)
                .build();
        try (RunningServer server = RunningServer.start(
                        dataDir, b -> b.runtime(options).workerReadyTimeout(Duration.ofSeconds(60)));
                Tenants tenants = Tenants.of(server)) {
            ManagedChannel dev = tenants.dev();
            ManagedChannel prod = tenants.prod();
            String first = tenants.devAtItsShare();
            TestCode code = uploaded(dev, "shares");
            catalog(dev).createExternalFunctionVersion(deploy(code));

            StatusRuntimeException refused = catchThrowableOfType(() -> echo(dev), StatusRuntimeException.class);
            assertThat(refused)
                    .as("a call that needs a replica past the environment's share fails")
                    .isNotNull();
            assertThat(refused.getStatus().getDescription())
                    .contains("this environment runs 2 sandboxes at once, the most one environment may (half of"
                            + " the 4 the server runs): terminate one first");

            // the other half is still the other environments'
            create(prod);
            create(prod);

            // a place the tenant frees is its replica's; its sandboxes and replica together stay at its share
            terminate(dev, first);
            assertThat(echo(dev)).endsWith("|ping");
            // a replica that dies gives its place back before the call that lost it answers: the next call's
            // replica finds it free
            StatusRuntimeException crashed =
                    catchThrowableOfType(() -> call(dev, "crash"), StatusRuntimeException.class);
            assertThat(crashed.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(echo(dev)).endsWith("|ping");
            StatusRuntimeException full = catchThrowableOfType(() -> create(dev), StatusRuntimeException.class);
            assertThat(full.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(full.getStatus().getDescription()).contains("this environment runs 2 sandboxes at once");
        }
    }

    /**
     * Before a deployment is accepted, the server runs {@code java -version} in a sandbox of the workers' image. That
     * sandbox started on the runtime directly, so a tenant at its share deploying functions of many images at once
     * started one per image beyond its share and the server's limit. It now takes a place among the deploying
     * environment's sandboxes.
     */
    @Test
    void aWorkerImageCheckCountsAmongItsEnvironmentsSandboxes(@TempDir Path dataDir) throws Exception {
        DockerRuntimeOptions options = DockerRuntimeOptions.builder()
                .defaultImage(DockerTesting.image())
                .workerImage(DockerTesting.jreImage())
                .maxSandboxes(4)
                .build();
        try (RunningServer server = RunningServer.start(dataDir, b -> b.runtime(options));
                Tenants tenants = Tenants.of(server)) {
            ManagedChannel dev = tenants.dev();
            ManagedChannel prod = tenants.prod();
            String first = tenants.devAtItsShare();
            TestCode devCode = uploaded(dev, "check-dev");
            StatusRuntimeException refused = catchThrowableOfType(
                    () -> catalog(dev).createExternalFunctionVersion(deploy(devCode)), StatusRuntimeException.class);
            assertThat(refused).as("the check needs a sandbox past the share").isNotNull();
            assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(refused.getStatus().getDescription())
                    .contains("this environment runs 2 sandboxes at once, the most one environment may (half of"
                            + " the 4 the server runs): terminate one first");

            // another environment's deployment checks the image in a place of its own
            TestCode prodCode = uploaded(prod, "check-prod");
            assertThat(catalog(prod)
                            .createExternalFunctionVersion(deploy(prodCode))
                            .hasExternalFunctionVersion())
                    .isTrue();
            // and the check gave its place back: prod still runs its two sandboxes
            create(prod);
            create(prod);

            // a place dev frees is the check's (the image passed a moment ago: no check runs at all now, so
            // another image, the busybox one without java, makes the check run and say what is wrong)
            terminate(dev, first);
            StatusRuntimeException noJava = catchThrowableOfType(
                    () -> catalog(dev)
                            .createExternalFunctionVersion(deploy(devCode).toBuilder()
                                    .setSpec(deploy(devCode).getSpec().toBuilder()
                                            .setContainerSpec(ChalkContainerSpec.newBuilder()
                                                    .setImage(DockerTesting.image())))
                                    .build()),
                    StatusRuntimeException.class);
            assertThat(noJava.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
            assertThat(noJava.getStatus().getDescription()).contains("java");
            // the check's place is free again
            create(dev);
        }
    }

    /** Two environments' channels to one server, closed together. */
    private record Tenants(ManagedChannel dev, ManagedChannel prod) implements AutoCloseable {
        static Tenants of(RunningServer server) {
            return new Tenants(
                    RunningServer.authenticated(server.server, "dev"),
                    RunningServer.authenticated(server.server, "prod"));
        }

        /** Creates two of dev's sandboxes, its share of the server's four; the first one's id. */
        String devAtItsShare() {
            String first = create(dev);
            create(dev);
            return first;
        }

        @Override
        public void close() throws InterruptedException {
            dev.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            prod.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    private static TestCode uploaded(ManagedChannel channel, String name) throws Exception {
        TestCode code = new TestCode(name);
        code.upload(channel);
        return code;
    }

    private static CreateExternalFunctionVersionRequest deploy(TestCode code) {
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName("shared")
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                        .setScalingSpec(
                                ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(1)))
                .setConfig(FunctionConfig.newBuilder()
                        .putOptions("chalk_compute.code", code.manifestDigest)
                        .putOptions("chalk_compute.functions", "echo=t.W#echo,crash=t.W#crash")
                        .putOptions("chalk_compute.worker", "plain"))
                .build();
    }

    private static ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog(
            ManagedChannel channel) {
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(channel).withDeadlineAfter(90, TimeUnit.SECONDS);
    }

    private static String echo(ManagedChannel channel) {
        return call(channel, "echo");
    }

    private static String call(ManagedChannel channel, String function) {
        return catalog(channel)
                .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName("shared"))
                        .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                .setName(function)
                                .setFeatherStream(ByteString.copyFromUtf8("ping")))
                        .build())
                .getRemoteCallResponse()
                .getFeatherStream()
                .toStringUtf8();
    }

    /** The workload identities the server keeps (a directory each, its token refreshed until released). */
    private static long identities(Path dataDir) throws java.io.IOException {
        try (var dirs = java.nio.file.Files.list(dataDir.resolve("identity"))) {
            return dirs.count();
        }
    }

    private static SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes(ManagedChannel channel) {
        return SandboxServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static String create(ManagedChannel channel) {
        return sandboxes(channel)
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSpec(ChalkContainerSpec.getDefaultInstance())
                        .build())
                .getSandbox()
                .getId();
    }

    private static void terminate(ManagedChannel channel, String id) {
        sandboxes(channel)
                .terminateSandbox(TerminateSandboxRequest.newBuilder().setId(id).build());
    }
}
