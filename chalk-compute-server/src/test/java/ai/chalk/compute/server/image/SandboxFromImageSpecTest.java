package ai.chalk.compute.server.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.AddFileStep;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.CustomImageSandboxUsage;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildUsageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildUsageResponse;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandResponse;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** CreateSandbox with an image_spec on the docker runtime: built (or found) first, then run; failures explained. */
@Tag("alone")
class SandboxFromImageSpecTest {

    @TempDir
    static Path dataDir;

    static RunningServer server;

    @BeforeAll
    static void start() throws Exception {
        server = RunningServer.start(
                dataDir,
                b -> b.runtime(DockerRuntimeOptions.builder()
                        .defaultImage(DockerTesting.image())
                        .build()));
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
        ImageTesting.removeBuilt();
    }

    private static ExecCommandResponse sh(String sandboxId, String script) {
        return server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(sandboxId)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script)
                        .build());
    }

    @Test
    void theSandboxRunsInTheImagesWorkdirWithItsEnvAndFiles() {
        ImageSpec spec = ImageTesting.busybox("mkdir -p /srv/app/data").toBuilder()
                .setWorkdir("/srv/app")
                .putEnv("GREETING", "hello from the image")
                .putEnv("TRICKY", "a \"quoted\" $HOME \\ value")
                .addSteps(BuildStep.newBuilder()
                        .setAddFile(AddFileStep.newBuilder()
                                .setDestination("bin/tool.sh")
                                .setContent(ByteString.copyFromUtf8("#!/bin/sh\necho tool ran in $(pwd)\n"))
                                .setMode(0750)))
                .addSteps(BuildStep.newBuilder()
                        .setAddFile(AddFileStep.newBuilder()
                                .setDestination("/etc/app.conf")
                                .setContent(ByteString.copyFromUtf8("plain"))))
                .build();
        SandboxInfo info = server.sandboxes()
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setImageSpec(spec)
                        .putEnv("FROM_SANDBOX", "yes")
                        .build())
                .getSandbox();
        assertThat(info.hasBuildId()).isTrue();
        ImageTesting.built("chalk-compute/custom:" + ContentHash.of(spec).substring(0, 32));
        ExecCommandResponse r = sh(
                info.getId(),
                "pwd; echo \"$GREETING\"; echo \"$TRICKY\"; echo $FROM_SANDBOX;"
                        + " stat -c '%a %U' bin/tool.sh /etc/app.conf; ./bin/tool.sh; cat /etc/app.conf");
        assertThat(r.getStderr().toStringUtf8()).isEmpty();
        assertThat(r.getStdout().toStringUtf8()).isEqualTo("""
                /srv/app
                hello from the image
                a "quoted" $HOME \\ value
                yes
                750 root
                644 root
                tool ran in /srv/app
                plain""");
        assertThat(server.sandboxes()
                        .getSandbox(GetSandboxRequest.newBuilder()
                                .setSandboxId(info.getId())
                                .build())
                        .getSandbox()
                        .getBuildId())
                .isEqualTo(info.getBuildId());

        // the usage of the build: this sandbox, found by build id and by content hash
        var images = CustomImageServiceGrpc.newBlockingStub(server.channel);
        GetCustomImageBuildUsageResponse usage =
                images.getCustomImageBuildUsage(GetCustomImageBuildUsageRequest.newBuilder()
                        .setBuildId(info.getBuildId())
                        .build());
        assertThat(usage.getSandboxesList())
                .extracting(CustomImageSandboxUsage::getId)
                .containsExactly(info.getId());
        assertThat(usage.getSandboxes(0).getStatus()).isEqualTo("RUNNING");
        assertThat(usage.getContainersList()).isEmpty();
        assertThat(usage.getScalingGroupsList()).isEmpty();

        // a second sandbox of the same spec reuses the image: same build
        SandboxInfo second = server.sandboxes()
                .createSandbox(
                        CreateSandboxRequest.newBuilder().setImageSpec(spec).build())
                .getSandbox();
        assertThat(second.getBuildId()).isEqualTo(info.getBuildId());
        assertThat(images.getCustomImageBuildUsage(GetCustomImageBuildUsageRequest.newBuilder()
                                .setContentHash(ContentHash.of(spec))
                                .build())
                        .getSandboxesList())
                .extracting(CustomImageSandboxUsage::getId)
                .containsExactly(info.getId(), second.getId());
        server.terminate(info.getId());
        server.terminate(second.getId());
    }

    @Test
    void aFailedBuildRefusesTheSandboxNamingTheBuildAndTheStep() {
        ImageSpec spec = ImageTesting.busybox("echo cannot-continue; false");
        assertThatThrownBy(() -> server.sandboxes()
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .setImageSpec(spec)
                                .build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                    assertThat(e.getStatus().getDescription())
                            .matches("(?s)image build [0-9a-f-]{36} failed: steps\\[0\\]"
                                    + " \\(run_commands\\[0\\]: echo cannot-continue; false\\) failed: .*returned a non-zero"
                                    + " code: 1\nLast output:\ncannot-continue; its logs: GetCustomImageBuildLogs with build_id"
                                    + " [0-9a-f-]{36}");
                });
    }

    @Test
    void aRequestWhoseDeadlineEndsDuringTheBuildFailsAndTheBuildGoesOn() throws Exception {
        ImageSpec spec = ImageTesting.busybox("sleep 3");
        SandboxServiceGrpc.SandboxServiceBlockingStub hurried =
                SandboxServiceGrpc.newBlockingStub(server.channel).withDeadlineAfter(1, TimeUnit.SECONDS);
        assertThatThrownBy(() -> hurried.createSandbox(
                        CreateSandboxRequest.newBuilder().setImageSpec(spec).build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED));
        // the build was not abandoned: a patient request gets the sandbox from the same build
        SandboxInfo info = server.sandboxes()
                .createSandbox(
                        CreateSandboxRequest.newBuilder().setImageSpec(spec).build())
                .getSandbox();
        ImageTesting.built("chalk-compute/custom:" + ContentHash.of(spec).substring(0, 32));
        var builds = CustomImageServiceGrpc.newBlockingStub(server.channel)
                .listCustomImageBuilds(
                        ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsRequest.getDefaultInstance())
                .getBuildsList();
        assertThat(builds.stream().filter(b -> b.getContentHash().equals(ContentHash.of(spec))))
                .hasSize(1);
        assertThat(sh(info.getId(), "echo ok").getStdout().toStringUtf8()).isEqualTo("ok\n");
        server.terminate(info.getId());
    }
}
