package ai.chalk.compute.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ImageTest {

    @Test
    void debianSlimIsPythonOnTrixie() {
        assertThat(Image.debianSlim().toSpec().getBaseImage()).isEqualTo("python:3.14-slim-trixie");
    }

    @Test
    void sandboxImageIsTheSdkDefault() {
        ImageSpec spec = Image.sandbox().toSpec();
        assertThat(spec.getBaseImage()).isEqualTo("python:3.14-slim-trixie");
        assertThat(spec.getWorkdir()).isEqualTo("/workspace");
        assertThat(spec.getStepsList())
                .singleElement()
                .satisfies(step -> assertThat(step.getRunCommands().getCommandsList())
                        .containsExactly("apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y"
                                + " --no-install-recommends git ca-certificates openssh-client"));
    }

    @Test
    void aptInstallQuotesPackagesForTheShell() {
        ImageSpec spec = Image.base("debian:trixie")
                .aptInstall(List.of("curl=8.5.0-2", "a b", "it's", ""))
                .toSpec();
        assertThat(spec.getSteps(0).getRunCommands().getCommands(0))
                .endsWith("--no-install-recommends curl=8.5.0-2 'a b' 'it'\"'\"'s' ''");
    }

    @Test
    void emptyPackageListsAddNoStep() {
        Image base = Image.debianSlim();
        assertThat(base.aptInstall(List.of())).isSameAs(base);
        assertThat(base.pipInstall(List.of())).isSameAs(base);
    }

    @Test
    void everyStepIsSerialisedInOrder(@TempDir Path dir) throws Exception {
        Path script = dir.resolve("entry.sh");
        Files.writeString(script, "#!/bin/sh\necho hi\n");
        ImageSpec spec = Image.base("node:25-trixie-slim")
                .pipInstall("requests", "flask")
                .aptInstall("git")
                .runCommands("mkdir -p /app/data", "touch /app/x")
                .addLocalFile(script, "/app/entry.sh", 0755)
                .addLocalFile(script, "/app/copy.sh")
                .dockerfileCommands(List.of("EXPOSE 8080"))
                .workdir("/app")
                .env(Map.of("FLASK_APP", "app:create_app"))
                .entrypoint(List.of("/app/entry.sh"))
                .cmd(List.of("serve"))
                .toSpec();
        assertThat(spec.getStepsList())
                .extracting(BuildStep::getStepCase)
                .containsExactly(
                        BuildStep.StepCase.PIP_INSTALL,
                        BuildStep.StepCase.RUN_COMMANDS,
                        BuildStep.StepCase.RUN_COMMANDS,
                        BuildStep.StepCase.ADD_FILE,
                        BuildStep.StepCase.ADD_FILE,
                        BuildStep.StepCase.DOCKERFILE_COMMANDS);
        assertThat(spec.getSteps(0).getPipInstall().getPackagesList()).containsExactly("requests", "flask");
        assertThat(spec.getSteps(2).getRunCommands().getCommandsList())
                .containsExactly("mkdir -p /app/data", "touch /app/x");
        var add = spec.getSteps(3).getAddFile();
        assertThat(add.getDestination()).isEqualTo("/app/entry.sh");
        assertThat(add.getContent().toString(StandardCharsets.UTF_8)).isEqualTo("#!/bin/sh\necho hi\n");
        assertThat(add.getMode()).isEqualTo(0755);
        assertThat(spec.getSteps(4).getAddFile().hasMode()).isFalse();
        assertThat(spec.getSteps(5).getDockerfileCommands().getCommandsList()).containsExactly("EXPOSE 8080");
        assertThat(spec.getWorkdir()).isEqualTo("/app");
        assertThat(spec.getEnvMap()).containsExactly(Map.entry("FLASK_APP", "app:create_app"));
        assertThat(spec.getEntrypointList()).containsExactly("/app/entry.sh");
        assertThat(spec.getCmdList()).containsExactly("serve");
    }

    @Test
    void addLocalFileReadsTheFileNow(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("config.yaml");
        Files.writeString(file, "a: 1\n");
        Image image = Image.debianSlim().addLocalFile(file, "/app/config.yaml");
        Files.writeString(file, "a: 2\n");
        assertThat(image.toSpec().getSteps(0).getAddFile().getContent().toStringUtf8())
                .isEqualTo("a: 1\n");
        assertThatThrownBy(() -> Image.debianSlim().addLocalFile(dir.resolve("missing"), "/x"))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("missing");
    }

    @Test
    void builderMethodsReturnNewImagesAndLeaveTheOriginalUnchanged() {
        Image base = Image.debianSlim().pipInstall("requests");
        String baseHash = base.contentHash();
        Image api = base.pipInstall("flask").workdir("/api");
        Image worker = base.pipInstall("celery").workdir("/worker");

        assertThat(base.steps()).hasSize(1);
        assertThat(base.workdir()).isEmpty();
        assertThat(base.contentHash()).isEqualTo(baseHash);
        assertThat(api.steps()).hasSize(2);
        assertThat(worker.steps()).hasSize(2);
        assertThat(api.toSpec().getSteps(1).getPipInstall().getPackagesList()).containsExactly("flask");
        assertThat(worker.toSpec().getSteps(1).getPipInstall().getPackagesList())
                .containsExactly("celery");
        assertThat(api.contentHash()).isNotEqualTo(worker.contentHash()).isNotEqualTo(baseHash);
        assertThatThrownBy(() -> base.steps().add(new ImageStep.PipInstall(List.of("x"))))
                .isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> base.env().put("A", "B")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void contentHashIsStableAndIndependentOfMapOrder() {
        Map<String, String> forward = new LinkedHashMap<>();
        Map<String, String> backward = new LinkedHashMap<>();
        for (int i = 0; i < 50; i++) {
            forward.put("VAR_" + i, "value " + i);
        }
        for (int i = 49; i >= 0; i--) {
            backward.put("VAR_" + i, "value " + i);
        }
        Image a = Image.debianSlim().pipInstall("pandas").env(forward);
        Image b = Image.debianSlim().pipInstall("pandas").env(backward);
        assertThat(a.contentHash()).matches("[0-9a-f]{64}").isEqualTo(b.contentHash());
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        // pinned: the hash of a fixed image must not change between versions or JVMs
        assertThat(Image.base("alpine:3").runCommands("true").contentHash())
                .isEqualTo(Image.base("alpine:3").runCommands("true").contentHash());
        assertThat(Image.debianSlim().contentHash())
                .isEqualTo(sha256Hex(ImageSpec.newBuilder()
                        .setBaseImage("python:3.14-slim-trixie")
                        .build()
                        .toByteArray()));
    }

    @Test
    void contentHashChangesWithAnyContent() {
        Image base = Image.debianSlim();
        assertThat(List.of(
                                base,
                                base.workdir("/a"),
                                base.env("A", "1"),
                                base.env("A", "2"),
                                base.cmd(List.of("x")),
                                base.entrypoint(List.of("x")),
                                base.runCommands("x"),
                                base.pipInstall("x"),
                                base.dockerfileCommands(List.of("x")))
                        .stream()
                        .map(Image::contentHash)
                        .distinct())
                .hasSize(9);
    }

    @Test
    void envMergesAndLaterValuesWin() {
        Image image = Image.debianSlim().env(Map.of("A", "1", "B", "2")).env("A", "3");
        assertThat(image.env()).containsExactly(Map.entry("A", "3"), Map.entry("B", "2"));
    }

    @Test
    void rejectsInvalidArguments() {
        assertThatThrownBy(() -> Image.base(" ")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Image.debianSlim().pipInstall("a", null)).isInstanceOf(NullPointerException.class);
    }

    private static String sha256Hex(byte[] bytes) {
        try {
            return java.util.HexFormat.of()
                    .formatHex(
                            java.security.MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void fromDockerfileInlinesItsInstructionsAndChains(@TempDir Path dir) throws Exception {
        Path dockerfile = Files.writeString(dir.resolve("Dockerfile"), """
                # a comment
                ARG VERSION=1
                FROM --platform=linux/amd64 debian:bookworm-slim
                RUN apt-get update && \\
                    apt-get install -y curl
                ENV A=b
                EXPOSE 8080
                """);
        ImageSpec spec = Image.fromDockerfile(dockerfile).pipInstall("requests").toSpec();
        assertThat(spec.getBaseImage()).isEqualTo("debian:bookworm-slim");
        assertThat(spec.getSteps(0).getDockerfileCommands().getCommandsList())
                .containsExactly(
                        "ARG VERSION=1", "RUN apt-get update &&  apt-get install -y curl", "ENV A=b", "EXPOSE 8080");
        assertThat(spec.getSteps(1).getPipInstall().getPackagesList()).containsExactly("requests");

        Path multi = Files.writeString(dir.resolve("Multi"), "FROM a AS x\nFROM b\n");
        assertThatThrownBy(() -> Image.fromDockerfile(multi))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("multi-stage");
        Path copy = Files.writeString(dir.resolve("Copy"), "FROM a\nCOPY . /app\n");
        assertThatThrownBy(() -> Image.fromDockerfile(copy)).hasMessageContaining("addLocalDir");
        Path none = Files.writeString(dir.resolve("None"), "RUN true\n");
        assertThatThrownBy(() -> Image.fromDockerfile(none)).hasMessageContaining("before FROM");
    }

    @Test
    void requirementsAreReadAndInlined(@TempDir Path dir) throws Exception {
        Path requirements = Files.writeString(
                dir.resolve("requirements.txt"), "# pinned\npandas==2.2.0\n\nnumpy>=1.26  # fast arrays\n");
        assertThat(Image.debianSlim()
                        .pipInstallFromRequirements(requirements)
                        .toSpec()
                        .getSteps(0)
                        .getPipInstall()
                        .getPackagesList())
                .containsExactly("pandas==2.2.0", "numpy>=1.26");
        Path options = Files.writeString(dir.resolve("opts.txt"), "-r other.txt\n");
        assertThatThrownBy(() -> Image.debianSlim().pipInstallFromRequirements(options))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-r other.txt");
    }

    @Test
    void addLocalDirAddsEveryFileInPathOrderWithItsMode(@TempDir Path dir) throws Exception {
        Path src = Files.createDirectories(dir.resolve("src"));
        Files.writeString(Files.createDirectories(src.resolve("pkg")).resolve("b.py"), "b");
        Path run = Files.writeString(src.resolve("run.sh"), "#!/bin/sh\n");
        Files.setPosixFilePermissions(run, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.createSymbolicLink(src.resolve("link"), Path.of("/etc/passwd"));
        ImageSpec spec = Image.debianSlim().addLocalDir(src, "/app/").toSpec();
        assertThat(spec.getStepsList())
                .extracting(s -> s.getAddFile().getDestination())
                .containsExactly("/app/pkg/b.py", "/app/run.sh");
        assertThat(spec.getSteps(1).getAddFile().getMode()).isEqualTo(0755);
        assertThat(Image.debianSlim().addLocalDir(src, "/app").contentHash())
                .isEqualTo(Image.debianSlim().addLocalDir(src, "/app/").contentHash());
    }
}
