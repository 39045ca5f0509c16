package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandResponse;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.LocalRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.RuntimeOptions;
import com.google.protobuf.ByteString;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The server on the docker runtime: selection by name and by {@code auto}, images through the gRPC API. */
@Tag("alone")
class DockerServerTest {

    @Test
    void theServerRunsSandboxesAsContainersOfTheRequestedImage(@TempDir Path dataDir) throws Exception {
        String image = DockerTesting.image();
        try (RunningServer server = RunningServer.start(
                dataDir,
                b -> b.runtime(DockerRuntimeOptions.builder()
                        .defaultImage("chalk-compute-test/absent:never")
                        .build()))) {
            assertThat(server.server.runtimeName()).isEqualTo("docker");
            assertThat(server.server.isolation().level()).isEqualTo("container");
            String id = server.sandboxes()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .setImage(image)
                            .putEnv("GREETING", "hi")
                            .build())
                    .getSandbox()
                    .getId();
            ExecCommandResponse r = server.processes()
                    .execCommand(ExecCommandRequest.newBuilder()
                            .setSandboxId(id)
                            .setCommand("sh")
                            .addArgs("-c")
                            .addArgs("echo $GREETING; tr a-z A-Z")
                            .setStdin(ByteString.copyFromUtf8("shout"))
                            .build());
            assertThat(r.getStdout().toStringUtf8()).isEqualTo("hi\nSHOUT");
            assertThat(r.getExitCode()).isZero();
            assertThat(DockerTesting.docker("inspect", DockerRuntime.containerName(id))
                            .code())
                    .isZero();
            server.terminate(id);
            assertThat(DockerTesting.docker("inspect", DockerRuntime.containerName(id))
                            .code())
                    .isNotZero();
            // without an image, the runtime's default, which this engine does not have: a clear error
            assertThatThrownBy(server::createSandbox)
                    .hasMessageContaining("chalk-compute-test/absent:never")
                    .hasMessageContaining("is not on the Docker engine");
        }
    }

    @Test
    void autoPicksDockerWhenAnEngineAnswersAndLocalOtherwise(@TempDir Path dataDir) throws Exception {
        DockerTesting.image();
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(dataDir.resolve("a"))
                .runtime(RuntimeOptions.auto(LocalRuntimeOptions.DEFAULTS, DockerRuntimeOptions.DEFAULTS))
                .build()
                .start()) {
            assertThat(server.runtimeName()).isEqualTo("docker");
        }
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(dataDir.resolve("b"))
                .runtime(RuntimeOptions.auto(
                        LocalRuntimeOptions.DEFAULTS,
                        DockerRuntimeOptions.builder()
                                .host("unix:///nonexistent/docker.sock")
                                .build()))
                .build()
                .start()) {
            assertThat(server.runtimeName()).isEqualTo("local");
        }
        try (ComputeServer server =
                ComputeServer.builder().dataDir(dataDir.resolve("c")).build().start()) {
            assertThat(server.runtimeName()).as("the default").isEqualTo("local");
        }
    }

    @Test
    void dockerWithoutAnEngineRefusesToStart(@TempDir Path dataDir) {
        assertThatThrownBy(() -> ComputeServer.builder()
                        .dataDir(dataDir)
                        .runtime(DockerRuntimeOptions.builder()
                                .host("unix:///nonexistent/docker.sock")
                                .build())
                        .build()
                        .start())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("no Docker engine at unix:///nonexistent/docker.sock: start dockerd or use"
                        + " --runtime local");
    }
}
