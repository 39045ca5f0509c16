package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.AddFileStep;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.DockerfileCommandsStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.image.ContentHash;
import ai.chalk.compute.server.image.ImageBuildException;
import ai.chalk.compute.server.image.ImageSpecCheck;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.host.Sysctl;
import com.google.protobuf.ByteString;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Finding 13 as attacks: image builds try to make the engine fetch from the host's network, to read other images on
 * the engine, and to reach host services or exhaust the host from a build step.
 */
@Tag("alone")
class DockerImageBuildSecurityTest extends DockerTesting.WithRuntime {

    private static ImageSpec dockerfile(String... lines) {
        return ImageSpec.newBuilder()
                .setBaseImage(DockerTesting.image())
                .addSteps(BuildStep.newBuilder()
                        .setRunCommands(RunCommandsStep.newBuilder().addCommands("true")))
                .addSteps(BuildStep.newBuilder()
                        .setDockerfileCommands(
                                DockerfileCommandsStep.newBuilder().addAllCommands(List.of(lines))))
                .build();
    }

    private void assertRefused(ImageSpec spec, String... fragments) {
        ImageSpecCheck.validate(spec);
        assertThatThrownBy(() -> runtime.imageBuilder().check(spec))
                .isInstanceOfSatisfying(ComputeException.class, e -> {
                    assertThat(e.kind()).isEqualTo(ComputeException.Kind.REFUSED);
                    assertThat(e.getMessage()).contains(fragments);
                });
        // a build resumed after a restart (never checked when asked) is refused as well, before the engine sees it
        assertThatThrownBy(() -> runtime.imageBuilder().build(spec, ContentHash.of(spec), line -> {}))
                .isInstanceOf(ImageBuildException.class)
                .hasMessageContaining(fragments[0]);
    }

    @Test
    void urlSourcesOfAddAreRefusedHoweverTheyAreWritten() {
        String field = "image_spec.steps[1].dockerfile_commands[0]";
        assertRefused(
                dockerfile("ADD http://127.0.0.1:8080/secret /secret"),
                field,
                "ADDs \"http://127.0.0.1",
                "run_commands",
                "add_file");
        assertRefused(dockerfile("add https://169.254.169.254/latest/meta-data/ /m"), field, "169.254.169.254");
        assertRefused(dockerfile("ADD --chown=0:0 git@github.com:owner/repo.git /repo"), field);
        assertRefused(dockerfile("ADD [\"http://127.0.0.1:8080/a\", \"/a\"]"), field);
        assertRefused(dockerfile("ADD ht'tp:'//127.0.0.1:8080/a /a"), field);
        assertRefused(
                dockerfile("ARG U=http://127.0.0.1:8080/a", "ADD $U /a"), "image_spec.steps[1].dockerfile_commands[1]");
        assertRefused(dockerfile("ADD h\\ttp://127.0.0.1:8080/a /a"), field);
        // split over a line continuation, with a comment in between, as the engine's parser joins them
        assertRefused(dockerfile("ADD \\", "# nothing to see", "  http://127.0.0.1:8080/a /a"), field);
        // a trigger the image keeps for images built on it
        assertRefused(dockerfile("ONBUILD ADD http://127.0.0.1:8080/a /a"), field, "ONBUILD");
    }

    @Test
    void copyingFromAnotherImageIsRefused() {
        String field = "image_spec.steps[1].dockerfile_commands[0]";
        assertRefused(
                dockerfile("COPY --from=chalk-compute/custom:0123 /etc/passwd /stolen"),
                field,
                "--from=chalk-compute/custom:0123",
                "another image");
        assertRefused(dockerfile("COPY --chown=0:0 --FROM=0 /etc/passwd /stolen"), field, "another image");
        assertRefused(dockerfile("ADD --from=other /x /x"), field, "another image");
        assertRefused(dockerfile("ONBUILD COPY --from=other /x /x"), field, "another image");
        assertRefused(dockerfile("RUN --mount=type=bind,from=other,target=/m cat /m/etc/shadow"), field, "--mount");
    }

    @Test
    void aDockerfileCannotSkipTheBuildsRestrictedShell() {
        String field = "image_spec.steps[1].dockerfile_commands[0]";
        assertRefused(dockerfile("SHELL [\"/bin/sh\", \"-c\"]"), field, "SHELL");
        assertRefused(dockerfile("RUN [\"/bin/sh\", \"-c\", \"mknod /dev/sda b 8 0\"]"), field, "exec form");
        assertRefused(dockerfile("run   [\"id\"]"), field, "exec form");
    }

    /**
     * The engine's build API cannot restrict a step's container, so every step goes through the build's own shell:
     * root keeps a sandbox's capabilities only (no MKNOD, SETPCAP, SYS_CHROOT, NET_RAW ...), everyone gets
     * no_new_privs, and the helpers it needs are gone from the image built.
     */
    @Test
    void buildStepsHaveASandboxsCapabilitiesAndNoNewPrivileges() throws Exception {
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage(DockerTesting.image())
                .putEnv("NONCE", Long.toString(System.nanoTime()))
                .addSteps(BuildStep.newBuilder()
                        .setRunCommands(RunCommandsStep.newBuilder()
                                .addCommands("grep -E '^(CapBnd|CapEff|NoNewPrivs)' /proc/self/status")
                                .addCommands("if mknod /tmp/disk b 8 0 2>/dev/null; then echo MKNOD-WORKED; else"
                                        + " echo mknod-refused; fi")
                                .addCommands("echo multi-line\ngrep NoNewPrivs /proc/self/status | sed 's/^/MULTI /'")))
                .addSteps(BuildStep.newBuilder()
                        .setDockerfileCommands(DockerfileCommandsStep.newBuilder()
                                .addCommands("USER nobody")
                                .addCommands(
                                        "RUN grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | sed 's/^/NOBODY /'")
                                .addCommands("USER root")))
                .build();
        List<String> log = new CopyOnWriteArrayList<>();
        String ref = runtime.imageBuilder().build(spec, ContentHash.of(spec), log::add);
        try {
            // CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID NET_BIND_SERVICE: a docker sandbox's set
            assertThat(log)
                    .contains(
                            "CapBnd:\t00000000000004fb",
                            "CapEff:\t00000000000004fb",
                            "NoNewPrivs:\t1",
                            "mknod-refused",
                            "MULTI NoNewPrivs:\t1",
                            "NOBODY CapEff:\t0000000000000000",
                            "NOBODY NoNewPrivs:\t1");
            assertThat(log).doesNotContain("MKNOD-WORKED");
            DockerTesting.Result ls = DockerTesting.run(List.of("docker", "run", "--rm", ref, "ls", "-a", "/"));
            assertThat(ls.output()).contains("etc").doesNotContain(".chalk");
        } finally {
            DockerTesting.docker("rmi", "-f", ref);
        }
    }

    private static BuildStep run(String... commands) {
        return BuildStep.newBuilder()
                .setRunCommands(RunCommandsStep.newBuilder().addAllCommands(List.of(commands)))
                .build();
    }

    private static final String CAPS = "grep -E '^CapBnd' /proc/self/status | sed 's/^/STEP /'";

    /**
     * The build shell lives in the image being built, which a root step may write: one step rewrites it (in place,
     * and by turning its directory into a link to one of its own), and the next still runs with a sandbox's
     * capabilities, because the helpers are copied in again before every step.
     */
    @Test
    void aStepThatRewritesTheBuildShellDoesNotReachTheNext() throws Exception {
        String evilShell = "echo EVIL-SHELL; exec /bin/sh -c \"$1\"";
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage(DockerTesting.image())
                .putEnv("NONCE", Long.toString(System.nanoTime()))
                .addSteps(run(
                        "printf '%s\\n' '" + evilShell + "' > /.chalk/run && cp /bin/busybox /.chalk/bin/busybox",
                        CAPS))
                .addSteps(BuildStep.newBuilder()
                        .setDockerfileCommands(DockerfileCommandsStep.newBuilder()
                                .addCommands("RUN mkdir -p /tmp/own/bin && cp /bin/busybox /tmp/own/bin/busybox"
                                        + " && printf '%s\\n' '" + evilShell + "' > /tmp/own/run && rm -rf /.chalk"
                                        + " && ln -s /tmp/own /.chalk")
                                .addCommands("RUN " + CAPS)))
                .addSteps(run(CAPS))
                .build();
        List<String> log = new CopyOnWriteArrayList<>();
        String ref = runtime.imageBuilder().build(spec, ContentHash.of(spec), log::add);
        try {
            assertThat(log).doesNotContain("EVIL-SHELL");
            assertThat(log.stream().filter(l -> l.startsWith("STEP ")))
                    .hasSize(3)
                    .allMatch(l -> l.equals("STEP CapBnd:\t00000000000004fb"));
            // the numbering the user sees counts the user's instructions only
            assertThat(log).anyMatch(l -> l.startsWith("Step 1/"));
        } finally {
            DockerTesting.docker("rmi", "-f", ref);
        }
    }

    /** A shared library that reports, from every process that loads it, that process's bounding set. */
    private static byte[] reportingLibrary(Path dir) throws Exception {
        Path source = dir.resolve("evil.c");
        Files.writeString(source, """
                #include <fcntl.h>
                #include <string.h>
                #include <unistd.h>
                __attribute__((constructor)) static void report(void) {
                    char buf[4096]; int fd = open("/proc/self/status", O_RDONLY); if (fd < 0) return;
                    ssize_t n = read(fd, buf, sizeof buf - 1); close(fd); if (n <= 0) return; buf[n] = 0;
                    char *at = strstr(buf, "CapBnd:"); if (!at) return; char *end = strchr(at, '\\n');
                    write(2, "EVIL ", 5); write(2, at, end ? (size_t) (end - at + 1) : strlen(at));
                }
                """);
        Path library = dir.resolve("evil.so");
        DockerTesting.Result cc =
                DockerTesting.run(List.of("gcc", "-shared", "-fPIC", "-o", library.toString(), source.toString()));
        assertThat(cc.code()).as("gcc (CI installs it): " + cc.output()).isZero();
        return Files.readAllBytes(library);
    }

    /**
     * The build shell's capability drop is a dynamic program (the host's setpriv) that runs with every capability a
     * step has: a library preloaded through the step's environment (an image's {@code ENV LD_PRELOAD}) or through
     * the image's {@code /etc/ld.so.preload} must not run inside it. The step still sees its environment.
     */
    @Test
    void libraryPreloadsDoNotReachTheBuildShellsCapabilityDrop(@TempDir Path dir) throws Exception {
        byte[] evil = reportingLibrary(dir);
        BuildStep library = BuildStep.newBuilder()
                .setAddFile(AddFileStep.newBuilder()
                        .setDestination("/evil.so")
                        .setContent(ByteString.copyFrom(evil))
                        .setMode(0755))
                .build();
        ImageSpec viaEnv = ImageSpec.newBuilder()
                .setBaseImage(DockerTesting.image())
                .putEnv("NONCE", Long.toString(System.nanoTime()))
                .putEnv("LD_PRELOAD", "/evil.so")
                .putEnv("LD_AUDIT", "/evil.so")
                .addSteps(library)
                .addSteps(run(CAPS, "echo \"PRELOAD=$LD_PRELOAD AUDIT=$LD_AUDIT\""))
                .build();
        List<String> log = new CopyOnWriteArrayList<>();
        String ref = runtime.imageBuilder().build(viaEnv, ContentHash.of(viaEnv), log::add);
        DockerTesting.docker("rmi", "-f", ref);
        assertThat(log).contains("STEP CapBnd:\t00000000000004fb", "PRELOAD=/evil.so AUDIT=/evil.so");
        assertThat(log).noneMatch(l -> l.startsWith("EVIL") && !l.endsWith("00000000000004fb"));

        ImageSpec viaFile = ImageSpec.newBuilder()
                .setBaseImage(DockerTesting.image())
                .putEnv("NONCE", Long.toString(System.nanoTime()))
                .addSteps(library)
                .addSteps(run("echo /evil.so > /etc/ld.so.preload", CAPS))
                .build();
        List<String> fileLog = new CopyOnWriteArrayList<>();
        assertThatThrownBy(() -> runtime.imageBuilder().build(viaFile, ContentHash.of(viaFile), fileLog::add))
                .isInstanceOf(ImageBuildException.class)
                .hasMessageContaining("steps[1] (run_commands[1]")
                .hasMessageContaining("/etc/ld.so.preload")
                .hasMessageContaining("last step that runs a command");
        assertThat(fileLog).noneMatch(l -> l.startsWith("EVIL")).noneMatch(l -> l.startsWith("STEP"));
        // written by the last step that runs a command, it is kept
        ImageSpec lastStep = ImageSpec.newBuilder()
                .setBaseImage(DockerTesting.image())
                .putEnv("NONCE", Long.toString(System.nanoTime()))
                .addSteps(run("echo > /etc/ld.so.preload"))
                .build();
        String kept = runtime.imageBuilder().build(lastStep, ContentHash.of(lastStep), line -> {});
        try {
            assertThat(DockerTesting.docker("run", "--rm", kept, "ls", "/etc/ld.so.preload")
                            .code())
                    .isZero();
        } finally {
            DockerTesting.docker("rmi", "-f", kept);
        }
    }

    @Test
    void aStepCannotContinueIntoTheLinesAfterIt() {
        assertRefused(dockerfile("RUN echo \\"), "image_spec.steps[1].dockerfile_commands[0]", "line continuation");
        assertRefused(
                ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .addSteps(BuildStep.newBuilder()
                                .setDockerfileCommands(DockerfileCommandsStep.newBuilder()
                                        .addCommands("RUN true \\")
                                        .addCommands("  && echo joined \\")))
                        .addSteps(BuildStep.newBuilder()
                                .setDockerfileCommands(
                                        DockerfileCommandsStep.newBuilder().addCommands("SHELL [\"/bin/sh\", \"-c\"]")))
                        .build(),
                "image_spec.steps[0].dockerfile_commands[1]",
                "line continuation");
        // within its step, a continuation is the user's own business
        ImageSpec within = dockerfile("RUN echo a \\", "  b");
        ImageSpecCheck.validate(within);
        runtime.imageBuilder().check(within);
    }

    @Test
    void plainDockerfileCommandsStillPass() {
        ImageSpec spec = dockerfile(
                "EXPOSE 8080",
                "ENV A=http://example.com",
                "ADD files/0 /x",
                "COPY --chown=0:0 a b",
                "LABEL url=https://example.com",
                "RUN wget -q https://example.com || true",
                "ONBUILD RUN echo hi");
        ImageSpecCheck.validate(spec);
        runtime.imageBuilder().check(spec);
    }

    @Test
    void aBaseImageWhoseTriggersFetchUrlsIsRefused() throws Exception {
        // an image on the engine with a trigger (another tenant's, or pulled): the engine would run it first
        String evil = "chalk-compute-test/onbuild-evil:" + Long.toHexString(System.nanoTime());
        DockerTesting.Result made = DockerTesting.run(List.of(
                "sh",
                "-c",
                "docker create --name evil-$$ "
                        + DockerTesting.image() + " true >/dev/null && docker commit --change"
                        + " 'ONBUILD ADD http://127.0.0.1:9/x /x' evil-$$ " + evil + " >/dev/null; r=$?;"
                        + " docker rm -f evil-$$ >/dev/null; exit $r"));
        assertThat(made.code()).as(made.output()).isZero();
        try {
            ImageSpec spec = ImageSpec.newBuilder()
                    .setBaseImage(evil)
                    .addSteps(BuildStep.newBuilder()
                            .setRunCommands(RunCommandsStep.newBuilder().addCommands("true")))
                    .build();
            assertThatThrownBy(() -> runtime.imageBuilder().build(spec, ContentHash.of(spec), line -> {}))
                    .isInstanceOf(ImageBuildException.class)
                    .hasMessageContaining("image_spec.base_image \"" + evil + "\" has the ONBUILD trigger")
                    .hasMessageContaining("http://127.0.0.1:9/x");
        } finally {
            DockerTesting.docker("rmi", "-f", evil);
        }
    }

    @Test
    void buildStepsReachNoHostServiceAndAreLimited() throws Exception {
        try (HostService host = new HostService("HTTP/1.0 200 OK\r\n\r\nhost secret\n")) {
            int port = host.port();
            List<String> targets = HostService.hostAddresses();
            String probe = "gw=$(ip route | awk '/^default/ {print $3}'); echo \"ROUTE $gw\"; for a in $gw "
                    + String.join(" ", targets) + " 169.254.169.254; do"
                    + " if wget -q -T 3 -O - http://$a:" + port + "/ 2>/dev/null; then echo \"REACHED $a\"; fi; done";
            String limits = "grep -E ':pids:|:memory:' /proc/self/cgroup | sed 's/^/CGROUP /';"
                    + " echo \"MEMORY $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)\";"
                    + " echo \"NOFILE $(ulimit -n)\"";
            // the subshell dies at the first fork the limit refuses; builtins alone report how far it got
            String forks = "(n=0; while [ $n -lt 4300 ]; do sleep 60 & n=$((n+1)); echo $n > /tmp/n; done) 2>/dev/null;"
                    + " read n < /tmp/n; echo \"STARTED $n\"; kill -9 -1; true";
            ImageSpec spec = ImageSpec.newBuilder()
                    .setBaseImage(DockerTesting.image())
                    .putEnv("NONCE", Long.toString(System.nanoTime()))
                    .addSteps(BuildStep.newBuilder()
                            .setRunCommands(RunCommandsStep.newBuilder()
                                    .addCommands(probe)
                                    .addCommands(limits)))
                    .build();
            List<String> log = new CopyOnWriteArrayList<>();
            String ref = runtime.imageBuilder().build(spec, ContentHash.of(spec), log::add);
            try {
                String text = String.join("\n", log);
                assertThat(text).containsPattern("ROUTE \\d+\\.").doesNotContain("host secret");
                assertThat(log).noneMatch(l -> l.startsWith("REACHED"));
                assertThat(host.accepted()).isZero();
                assertThat(text)
                        .contains("CGROUP")
                        .containsPattern(":pids:/chalk-compute-builds/[0-9a-f]{32}/")
                        .contains("MEMORY " + DockerImageBuilder.MEMORY_BYTES)
                        .contains("NOFILE " + DockerImageBuilder.NOFILE);
            } finally {
                DockerTesting.docker("rmi", "-f", ref);
            }
            // a fork bomb in a build step stops at the build's process limit, not at the host's
            ImageSpec bomb = ImageSpec.newBuilder()
                    .setBaseImage(DockerTesting.image())
                    .putEnv("NONCE", Long.toString(System.nanoTime()))
                    .addSteps(BuildStep.newBuilder()
                            .setRunCommands(RunCommandsStep.newBuilder().addCommands(forks)))
                    .build();
            List<String> bombLog = new CopyOnWriteArrayList<>();
            String bombRef = runtime.imageBuilder().build(bomb, ContentHash.of(bomb), bombLog::add);
            DockerTesting.docker("rmi", "-f", bombRef);
            String started = bombLog.stream()
                    .filter(l -> l.startsWith("STARTED "))
                    .findFirst()
                    .orElseThrow();
            assertThat(Integer.parseInt(started.substring(8).strip())).isLessThan((int) DockerImageBuilder.PIDS_MAX);
        }
    }
    /**
     * A build step cannot take the host's terminals. The engine's build API takes no mount, so a step has the engine's
     * unlimited {@code devpts}; one opening {@code /dev/ptmx} until it failed held the host's whole pool (3,071 here)
     * for as long as the build ran, and no sandbox or container got a terminal meanwhile. Holding more than a build may
     * stops it, saying why, and the terminals are the host's again.
     */
    @Test
    void aBuildStepCannotHoldTheHostsTerminals() throws Exception {
        // each sleep holds one terminal, open as its input
        assertStoppedForTerminals(
                DockerTesting.image(),
                "n=0; while [ $n -lt 300 ]; do sleep 300 </dev/ptmx & n=$((n+1)); done; echo HOARDING; wait");
        // the other end only: the master closed once it is open keeps the terminal, under a deleted name
        assertStoppedForTerminals(
                DockerTesting.debianImage(),
                "perl -e 'my @held; for (1 .. 300) { open(my $m, \"+<\", \"/dev/ptmx\") or last;"
                        + " my $u = pack(\"i\", 0); ioctl($m, 0x40045431, $u); my $n = pack(\"I\", 0); ioctl($m, 0x80045430, $n);"
                        + " open(my $t, \"+<\", \"/dev/pts/\" . unpack(\"I\", $n)) or last; push @held, $t; close $m }"
                        + " print \"HOARDING \", scalar(@held), \"\\n\"; sleep 300'");
    }

    private void assertStoppedForTerminals(String image, String hoard) throws Exception {
        Path inUse = Path.of("/proc/sys/kernel/pty/nr");
        long before = Sysctl.read(inUse).orElseThrow();
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage(image)
                .putEnv("NONCE", Long.toString(System.nanoTime()))
                .addSteps(BuildStep.newBuilder()
                        .setRunCommands(RunCommandsStep.newBuilder().addCommands(hoard)))
                .build();
        List<String> log = new CopyOnWriteArrayList<>();
        long started = System.nanoTime();
        assertThatThrownBy(() -> runtime.imageBuilder().build(spec, ContentHash.of(spec), log::add))
                .isInstanceOf(ImageBuildException.class)
                .hasMessageContaining("run_commands")
                .hasMessageContaining("terminals, more than the " + SandboxDevices.PTYS + " a build may");
        assertThat(System.nanoTime() - started)
                .as("stopped, not run out (it sleeps 300 s)")
                .isLessThan(TimeUnit.SECONDS.toNanos(120));
        assertThat(log).anyMatch(l -> l.contains("the build was stopped"));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (Sysctl.read(inUse).orElseThrow() > before + SandboxDevices.PTYS) {
            assertThat(System.nanoTime()).as("the host's terminals back").isLessThan(deadline);
            Thread.sleep(100);
        }
    }
}
