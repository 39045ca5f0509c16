package ai.chalk.compute.server.image;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.AddFileStep;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.PipInstallStep;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandResponse;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import com.google.protobuf.ByteString;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real package managers in a built image, on Debian: apt installs tmux and pip from Debian's mirror, then pip
 * installs a wheel made here (PyPI is not reachable) that came in with add_file. One image, built once for the class
 * (apt is slow), serves both tests; the second asks for it by spec and finds it built.
 */
@Tag("alone")
class DebianImageTest {

    static final String WHEEL = "chalk_test_pkg-1.0-py3-none-any.whl";

    @TempDir
    static Path dataDir;

    static RunningServer server;
    static ImageSpec spec;

    @BeforeAll
    static void start() throws Exception {
        server = RunningServer.start(
                dataDir,
                b -> b.runtime(DockerRuntimeOptions.builder()
                        .defaultImage(DockerTesting.image())
                        .build()));
        spec = ImageSpec.newBuilder()
                .setBaseImage(DockerTesting.debianImage())
                .setWorkdir("/workspace")
                .addSteps(BuildStep.newBuilder()
                        .setRunCommands(RunCommandsStep.newBuilder()
                                .addCommands(
                                        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends"
                                                + " python3-pip tmux")))
                .addSteps(BuildStep.newBuilder()
                        .setAddFile(AddFileStep.newBuilder()
                                .setDestination("/tmp/wheels/" + WHEEL)
                                .setContent(ByteString.copyFrom(wheel()))))
                .addSteps(BuildStep.newBuilder()
                        .setPipInstall(PipInstallStep.newBuilder().addPackages("/tmp/wheels/" + WHEEL)))
                .build();
        ImageTesting.built("chalk-compute/custom:" + ContentHash.of(spec).substring(0, 32));
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
        ImageTesting.removeBuilt();
    }

    /** A sandbox of the class's image; the first call builds it (minutes allowed: apt downloads from the mirror). */
    private static String sandbox() {
        return server.sandboxes()
                .withDeadlineAfter(15, TimeUnit.MINUTES)
                .createSandbox(
                        CreateSandboxRequest.newBuilder().setImageSpec(spec).build())
                .getSandbox()
                .getId();
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
    void aWheelAddedWithTheImageIsInstalledByPip() {
        String id = sandbox();
        try {
            ExecCommandResponse r = sh(id, "python3 -c 'import pkg; print(pkg.GREETING)'; pwd");
            assertThat(r.getStderr().toStringUtf8()).isEmpty();
            assertThat(r.getStdout().toStringUtf8()).isEqualTo("hello from a wheel\n/workspace\n");
            assertThat(sh(id, "python3 -m pip show chalk-test-pkg | head -2")
                            .getStdout()
                            .toStringUtf8())
                    .isEqualTo("Name: chalk-test-pkg\nVersion: 1.0\n");
        } finally {
            server.terminate(id);
        }
    }

    /** The SDK's "Add tmux to a sandbox image": a detached session survives the exec that started it. */
    @Test
    void tmuxFromAptRunsADetachedSession() throws Exception {
        String id = sandbox();
        try {
            assertThat(sh(id, "tmux new-session -d -s work").getExitCode()).isZero();
            assertThat(sh(id, "tmux send-keys -t work 'echo hello' Enter").getExitCode())
                    .isZero();
            assertThat(sh(id, "tmux list-sessions").getStdout().toStringUtf8()).startsWith("work: 1 windows");
            String pane = "";
            for (int i = 0; i < 50 && !pane.contains("\nhello"); i++) {
                Thread.sleep(100);
                pane = sh(id, "tmux capture-pane -p -t work").getStdout().toStringUtf8();
            }
            assertThat(pane).contains("echo hello").contains("\nhello");
            assertThat(sh(id, "tmux kill-session -t work").getExitCode()).isZero();
        } finally {
            server.terminate(id);
        }
    }

    /** A pure-Python wheel: the module {@code pkg} and its dist-info, with a RECORD of sha256 digests. */
    static byte[] wheel() throws IOException {
        String distInfo = "chalk_test_pkg-1.0.dist-info/";
        Map<String, String> files = new LinkedHashMap<>();
        files.put("pkg/__init__.py", "GREETING = 'hello from a wheel'\n");
        files.put(distInfo + "METADATA", "Metadata-Version: 2.1\nName: chalk-test-pkg\nVersion: 1.0\n");
        files.put(
                distInfo + "WHEEL",
                "Wheel-Version: 1.0\nGenerator: chalk-compute-tests\nRoot-Is-Purelib: true\n" + "Tag: py3-none-any\n");
        StringBuilder record = new StringBuilder();
        for (var f : files.entrySet()) {
            byte[] content = f.getValue().getBytes(StandardCharsets.UTF_8);
            record.append(f.getKey())
                    .append(",sha256=")
                    .append(sha256(content))
                    .append(',')
                    .append(content.length)
                    .append('\n');
        }
        record.append(distInfo).append("RECORD,,\n");
        files.put(distInfo + "RECORD", record.toString());
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            for (var f : files.entrySet()) {
                zip.putNextEntry(new ZipEntry(f.getKey()));
                zip.write(f.getValue().getBytes(StandardCharsets.UTF_8));
                zip.closeEntry();
            }
        }
        return bytes.toByteArray();
    }

    private static String sha256(byte[] content) {
        try {
            return Base64.getUrlEncoder()
                    .withoutPadding()
                    .encodeToString(MessageDigest.getInstance("SHA-256").digest(content));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
