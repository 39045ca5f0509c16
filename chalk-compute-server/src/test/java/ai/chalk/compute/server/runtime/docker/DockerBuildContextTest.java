package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.AddFileStep;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.DockerfileCommandsStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.PipInstallStep;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import ai.chalk.compute.proto.sandbox.v1.UvPipInstallStep;
import ai.chalk.compute.proto.sandbox.v1.UvSyncStep;
import ai.chalk.compute.server.image.ImageSpecCheck;
import com.google.protobuf.ByteString;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import net.jpountz.lz4.LZ4FrameOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The Dockerfile and context rendered for each kind of step, byte for byte, and the tar the engine receives (uv_sync's
 * files decompressed from real LZ4 frames). Builds of these run in the image tests; uv itself is not installable here
 * (no PyPI), so uv steps are checked at this level.
 */
@Tag("alone")
class DockerBuildContextTest {

    static byte[] lz4(String text) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (LZ4FrameOutputStream lz4 = new LZ4FrameOutputStream(out)) {
            lz4.write(text.getBytes(StandardCharsets.UTF_8));
        }
        return out.toByteArray();
    }

    @Test
    void everyKindOfStepRendersAsDocumented() throws IOException {
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage("python:3.12-slim")
                .setWorkdir("/home/user/app")
                .putEnv("PYTHONDONTWRITEBYTECODE", "1")
                .putEnv("A_PRICE", "cost: $5 \"cheap\"")
                .addSteps(BuildStep.newBuilder()
                        .setRunCommands(RunCommandsStep.newBuilder()
                                .addCommands("mkdir -p /app/data")
                                .addCommands("cat > /x <<EOF\nline\nEOF")))
                .addSteps(BuildStep.newBuilder()
                        .setPipInstall(PipInstallStep.newBuilder()
                                .addPackages("pandas")
                                .addPackages("flask>=3")))
                .addSteps(BuildStep.newBuilder()
                        .setAddFile(AddFileStep.newBuilder()
                                .setDestination("conf/app.yaml")
                                .setContent(ByteString.copyFromUtf8("port: 8080\n"))))
                .addSteps(BuildStep.newBuilder()
                        .setAddFile(AddFileStep.newBuilder()
                                .setDestination("/app/run.sh")
                                .setContent(ByteString.copyFromUtf8("#!/bin/sh\n"))
                                .setMode(0755)))
                .addSteps(BuildStep.newBuilder()
                        .setDockerfileCommands(DockerfileCommandsStep.newBuilder()
                                .addCommands("EXPOSE 8080")
                                .addCommands("# a comment")
                                .addCommands("")))
                .addSteps(BuildStep.newBuilder()
                        .setUvPipInstall(UvPipInstallStep.newBuilder().addPackages("numpy")))
                .addSteps(BuildStep.newBuilder()
                        .setUvSync(UvSyncStep.newBuilder()
                                .setPyprojectTomlLz4(ByteString.copyFrom(lz4("[project]\nname = \"demo\"\n")))
                                .setUvLockLz4(ByteString.copyFrom(lz4("version = 1\n")))
                                .addExtras("dev")
                                .setWorkdir("project")))
                .addEntrypoint("/app/run.sh")
                .addCmd("serve")
                .addCmd("--port=8080")
                .build();
        ImageSpecCheck.validate(spec);
        DockerBuildContext context = DockerBuildContext.of(spec);
        assertThat(context.dockerfile()).isEqualTo("""
                FROM python:3.12-slim
                WORKDIR "/home/user/app"
                ENV A_PRICE="cost: \\$5 \\"cheap\\""
                ENV PYTHONDONTWRITEBYTECODE="1"
                RUN mkdir -p /app/data
                RUN ["/bin/sh","-c","cat > /x <<EOF\\nline\\nEOF"]
                RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir pandas 'flask>=3'
                COPY ["files/2","/home/user/app/conf/app.yaml"]
                COPY ["files/3","/app/run.sh"]
                EXPOSE 8080
                RUN uv pip install --system numpy
                COPY ["files/6/pyproject.toml","/home/user/app/project/pyproject.toml"]
                COPY ["files/6/uv.lock","/home/user/app/project/uv.lock"]
                RUN cd /home/user/app/project && UV_PROJECT_ENVIRONMENT="$(python3 -c 'import sys; print(sys.prefix)')" \
                uv sync --no-install-project --frozen --extra dev
                ENTRYPOINT ["/app/run.sh"]
                CMD ["serve","--port=8080"]
                """);
        assertThat(context.instructions()).hasSize(16);
        assertThat(context.instructions().get(5)).isEqualTo("steps[0] (run_commands[1]: cat > /x <<EOF line EOF)");
        assertThat(context.instructions().get(13)).isEqualTo("steps[6] (uv_sync in /home/user/app/project)");

        Map<String, String> entries = new LinkedHashMap<>();
        try (TarArchiveInputStream tar = new TarArchiveInputStream(new ByteArrayInputStream(context.tar()))) {
            TarArchiveEntry e;
            while ((e = tar.getNextEntry()) != null) {
                entries.put(
                        e.getName(),
                        Integer.toOctalString(e.getMode()) + " "
                                + new String(tar.readAllBytes(), StandardCharsets.UTF_8));
            }
        }
        assertThat(entries)
                .containsExactly(
                        Map.entry("Dockerfile", "100644 " + context.dockerfile()),
                        Map.entry("files/2", "100644 port: 8080\n"),
                        Map.entry("files/3", "100755 #!/bin/sh\n"),
                        Map.entry("files/6/pyproject.toml", "100644 [project]\nname = \"demo\"\n"),
                        Map.entry("files/6/uv.lock", "100644 version = 1\n"));
    }

    /**
     * uv_sync's files count against the spec's 64 MiB as the builder holds them, decompressed: 16 MiB of zeros are 66 KB
     * of LZ4, and a spec of 500 such files, counted by their compressed size, held 8 GiB of the server's heap.
     */
    @Test
    void uvSyncFilesCountDecompressed() throws IOException {
        ByteString zeros = ByteString.copyFrom(lz4("\0".repeat(15 << 20)));
        assertThat(zeros.size()).isLessThan(100_000);
        ImageSpec.Builder spec = ImageSpec.newBuilder().setBaseImage("python:3.12-slim");
        for (int i = 0; i < 3; i++) {
            spec.addSteps(BuildStep.newBuilder()
                    .setUvSync(
                            UvSyncStep.newBuilder().setPyprojectTomlLz4(zeros).setUvLockLz4(zeros)));
        }
        assertThatThrownBy(() -> ImageSpecCheck.validate(spec.build()))
                .hasMessageStartingWith("image_spec.steps carry more than 64 MiB of files (at steps[2])");
    }

    @Test
    void uvSyncDataThatIsNotLz4IsRefusedNamingTheField() {
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage("python:3.12-slim")
                .addSteps(BuildStep.newBuilder()
                        .setUvSync(UvSyncStep.newBuilder().setPyprojectTomlLz4(ByteString.copyFromUtf8("[project]"))))
                .build();
        assertThatThrownBy(() -> ImageSpecCheck.validate(spec))
                .hasMessageStartingWith(
                        "INVALID_ARGUMENT: image_spec.steps[0].uv_sync.pyproject_toml_lz4 is not LZ4" + " frame data");
    }
}
