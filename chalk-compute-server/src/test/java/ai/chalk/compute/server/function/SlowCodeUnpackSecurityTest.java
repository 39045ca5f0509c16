package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.worker.PipeBlob;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A deploy whose code takes long to unpack holds no other deploy. The server unpacked every deploy's code inside one
 * lock, the one that orders deploys, routes and deletes: one tenant's slow unpack (here a zip the server reads from a
 * pipe that nothing writes to yet) held every other deploy of every environment until it ended.
 */
class SlowCodeUnpackSecurityTest {

    @TempDir
    Path dir;

    @Test
    void aDeployWhoseCodeUnpacksSlowlyHoldsNoOtherDeploy() throws Exception {
        try (RunningServer server = RunningServer.start(dir)) {
            var catalog = ExternalFunctionCatalogServiceGrpc.newFutureStub(server.channel);
            TestCode slow = new TestCode("slow", false);
            String zipDigest = slow.blobs.keySet().iterator().next();
            byte[] zip = slow.blobs.get(zipDigest);
            // the manifest gives the pipe's size, 0, so that the server takes the blob for present
            byte[] manifest = ("{\"entries\":[{\"name\":\"000-answer.zip\",\"kind\":\"dir\",\"digest\":\"" + zipDigest
                            + "\",\"size\":0}]}")
                    .getBytes(StandardCharsets.UTF_8);
            String manifestDigest = TestCode.digest(manifest);
            slow.blobs.put(manifestDigest, manifest);
            slow.upload(server.channel);
            String hex = zipDigest.substring("sha256:".length());
            Path blob = dir.resolve("blobs")
                    .resolve("sha256")
                    .resolve(hex.substring(0, 2))
                    .resolve(hex);
            PipeBlob.replace(blob);

            CompletableFuture<CreateExternalFunctionVersionResponse> slowDeploy =
                    deploy(catalog, "slow", manifestDigest);
            try {
                Path code = dir.resolve("functions").resolve("code");
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (!unpacking(code)) {
                    assertThat(System.nanoTime())
                            .as("the slow deploy's unpack starting")
                            .isLessThan(deadline);
                    Thread.sleep(20);
                }

                TestCode quick = new TestCode("quick", false);
                quick.upload(server.channel);
                assertThat(deploy(catalog, "quick", quick.manifestDigest)
                                .get(20, TimeUnit.SECONDS)
                                .getExternalFunctionVersion()
                                .getVersion())
                        .as("another deploy while the slow one unpacks")
                        .isEqualTo(1);
                assertThat(slowDeploy)
                        .as("the slow deploy, still reading its zip")
                        .isNotDone();

                PipeBlob.feed(blob, zip);
                assertThat(slowDeploy
                                .get(20, TimeUnit.SECONDS)
                                .getExternalFunctionVersion()
                                .getVersion())
                        .isEqualTo(1);
            } finally {
                PipeBlob.feed(blob, zip); // ends the slow unpack if an assertion failed before
            }
        }
    }

    private static CompletableFuture<CreateExternalFunctionVersionResponse> deploy(
            ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceFutureStub catalog,
            String name,
            String manifestDigest) {
        CompletableFuture<CreateExternalFunctionVersionResponse> out = new CompletableFuture<>();
        var call = catalog.withDeadlineAfter(60, TimeUnit.SECONDS)
                .createExternalFunctionVersion(CreateExternalFunctionVersionRequest.newBuilder()
                        .setFunctionName(name)
                        .setSpec(ScalingGroupSpec.newBuilder()
                                .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                                .setScalingSpec(ScalingSpec.newBuilder()
                                        .setMinReplicas(0)
                                        .setMaxReplicas(1)))
                        .setConfig(FunctionConfig.newBuilder()
                                .putOptions("chalk_compute.code", manifestDigest)
                                .putOptions("chalk_compute.functions", "echo=t.W#echo")
                                .putOptions("chalk_compute.worker", "plain"))
                        .build());
        call.addListener(
                () -> {
                    try {
                        out.complete(call.get());
                    } catch (Exception e) {
                        out.completeExceptionally(e);
                    }
                },
                Runnable::run);
        return out;
    }

    /** Whether a snapshot is being unpacked under {@code code} (its temporary directory is there). */
    private static boolean unpacking(Path code) throws java.io.IOException {
        if (!Files.isDirectory(code)) {
            return false;
        }
        try (Stream<Path> all = Files.list(code)) {
            return all.anyMatch(p -> p.getFileName().toString().startsWith(".tmp-"));
        }
    }
}
