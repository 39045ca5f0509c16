package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.DockerfileCommandsStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import ai.chalk.compute.server.image.ContentHash;
import ai.chalk.compute.server.image.ImageBuildException;
import ai.chalk.compute.server.image.ImageSpecCheck;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Finding 13 as attacks: image builds try to make the engine fetch from the host's network, to read other images on
 * the engine, and to reach host services or exhaust the host from a build step.
 */
class DockerImageBuildSecurityTest extends DockerTesting.WithRuntime {

    private static ImageSpec dockerfile(String... lines) {
        return ImageSpec.newBuilder().setBaseImage(DockerTesting.image())
                .addSteps(BuildStep.newBuilder().setRunCommands(RunCommandsStep.newBuilder().addCommands("true")))
                .addSteps(BuildStep.newBuilder().setDockerfileCommands(DockerfileCommandsStep.newBuilder()
                        .addAllCommands(List.of(lines))))
                .build();
    }

    private void assertRefused(ImageSpec spec, String... fragments) {
        ImageSpecCheck.validate(spec);
        assertThatThrownBy(() -> runtime.imageBuilder().check(spec))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                    assertThat(e.getStatus().getDescription()).contains(fragments);
                });
        // a build resumed after a restart (never checked when asked) is refused as well, before the engine sees it
        assertThatThrownBy(() -> runtime.imageBuilder().build(spec, ContentHash.of(spec), line -> { }))
                .isInstanceOf(ImageBuildException.class).hasMessageContaining(fragments[0]);
    }

    @Test
    void urlSourcesOfAddAreRefusedHoweverTheyAreWritten() {
        String field = "image_spec.steps[1].dockerfile_commands[0]";
        assertRefused(dockerfile("ADD http://127.0.0.1:8080/secret /secret"), field, "ADDs \"http://127.0.0.1",
                "run_commands", "add_file");
        assertRefused(dockerfile("add https://169.254.169.254/latest/meta-data/ /m"), field, "169.254.169.254");
        assertRefused(dockerfile("ADD --chown=0:0 git@github.com:owner/repo.git /repo"), field);
        assertRefused(dockerfile("ADD [\"http://127.0.0.1:8080/a\", \"/a\"]"), field);
        assertRefused(dockerfile("ADD ht'tp:'//127.0.0.1:8080/a /a"), field);
        assertRefused(dockerfile("ARG U=http://127.0.0.1:8080/a", "ADD $U /a"),
                "image_spec.steps[1].dockerfile_commands[1]");
        assertRefused(dockerfile("ADD h\\ttp://127.0.0.1:8080/a /a"), field);
        // split over a line continuation, with a comment in between, as the engine's parser joins them
        assertRefused(dockerfile("ADD \\", "# nothing to see", "  http://127.0.0.1:8080/a /a"), field);
        // a trigger the image keeps for images built on it
        assertRefused(dockerfile("ONBUILD ADD http://127.0.0.1:8080/a /a"), field, "ONBUILD");
    }

    @Test
    void copyingFromAnotherImageIsRefused() {
        String field = "image_spec.steps[1].dockerfile_commands[0]";
        assertRefused(dockerfile("COPY --from=chalk-compute/custom:0123 /etc/passwd /stolen"), field,
                "--from=chalk-compute/custom:0123", "another image");
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
        ImageSpec spec = ImageSpec.newBuilder().setBaseImage(DockerTesting.image())
                .putEnv("NONCE", Long.toString(System.nanoTime()))
                .addSteps(BuildStep.newBuilder().setRunCommands(RunCommandsStep.newBuilder()
                        .addCommands("grep -E '^(CapBnd|CapEff|NoNewPrivs)' /proc/self/status")
                        .addCommands("if mknod /tmp/disk b 8 0 2>/dev/null; then echo MKNOD-WORKED; else"
                                + " echo mknod-refused; fi")
                        .addCommands("echo multi-line\ngrep NoNewPrivs /proc/self/status | sed 's/^/MULTI /'")))
                .addSteps(BuildStep.newBuilder().setDockerfileCommands(DockerfileCommandsStep.newBuilder()
                        .addCommands("USER nobody")
                        .addCommands("RUN grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | sed 's/^/NOBODY /'")
                        .addCommands("USER root")))
                .build();
        List<String> log = new CopyOnWriteArrayList<>();
        String ref = runtime.imageBuilder().build(spec, ContentHash.of(spec), log::add);
        try {
            // CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID NET_BIND_SERVICE: a docker sandbox's set
            assertThat(log).contains("CapBnd:\t00000000000004fb", "CapEff:\t00000000000004fb", "NoNewPrivs:\t1",
                    "mknod-refused", "MULTI NoNewPrivs:\t1", "NOBODY CapEff:\t0000000000000000",
                    "NOBODY NoNewPrivs:\t1");
            assertThat(log).doesNotContain("MKNOD-WORKED");
            DockerTesting.Result ls = DockerTesting.run(List.of("docker", "run", "--rm", ref, "ls", "-a", "/"));
            assertThat(ls.output()).contains("etc").doesNotContain(".chalk");
        } finally {
            DockerTesting.docker("rmi", "-f", ref);
        }
    }

    @Test
    void plainDockerfileCommandsStillPass() {
        ImageSpec spec = dockerfile("EXPOSE 8080", "ENV A=http://example.com", "ADD files/0 /x", "COPY --chown=0:0 a b",
                "LABEL url=https://example.com", "RUN wget -q https://example.com || true",
                "ONBUILD RUN echo hi");
        ImageSpecCheck.validate(spec);
        runtime.imageBuilder().check(spec);
    }

    @Test
    void aBaseImageWhoseTriggersFetchUrlsIsRefused() throws Exception {
        // an image on the engine with a trigger (another tenant's, or pulled): the engine would run it first
        String evil = "chalk-compute-test/onbuild-evil:" + Long.toHexString(System.nanoTime());
        DockerTesting.Result made = DockerTesting.run(List.of("sh", "-c", "docker create --name evil-$$ "
                + DockerTesting.image() + " true >/dev/null && docker commit --change"
                + " 'ONBUILD ADD http://127.0.0.1:9/x /x' evil-$$ " + evil + " >/dev/null; r=$?;"
                + " docker rm -f evil-$$ >/dev/null; exit $r"));
        assertThat(made.code()).as(made.output()).isZero();
        try {
            ImageSpec spec = ImageSpec.newBuilder().setBaseImage(evil)
                    .addSteps(BuildStep.newBuilder().setRunCommands(RunCommandsStep.newBuilder().addCommands("true")))
                    .build();
            assertThatThrownBy(() -> runtime.imageBuilder().build(spec, ContentHash.of(spec), line -> { }))
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
            ImageSpec spec = ImageSpec.newBuilder().setBaseImage(DockerTesting.image())
                    .putEnv("NONCE", Long.toString(System.nanoTime()))
                    .addSteps(BuildStep.newBuilder().setRunCommands(RunCommandsStep.newBuilder()
                            .addCommands(probe).addCommands(limits)))
                    .build();
            List<String> log = new CopyOnWriteArrayList<>();
            String ref = runtime.imageBuilder().build(spec, ContentHash.of(spec), log::add);
            try {
                String text = String.join("\n", log);
                assertThat(text).containsPattern("ROUTE \\d+\\.").doesNotContain("host secret");
                assertThat(log).noneMatch(l -> l.startsWith("REACHED"));
                assertThat(host.accepted()).isZero();
                assertThat(text).contains("CGROUP").containsPattern(":pids:/chalk-compute-builds/[0-9a-f]{32}/")
                        .contains("MEMORY " + DockerImageBuilder.MEMORY_BYTES)
                        .contains("NOFILE " + DockerImageBuilder.NOFILE);
            } finally {
                DockerTesting.docker("rmi", "-f", ref);
            }
            // a fork bomb in a build step stops at the build's process limit, not at the host's
            ImageSpec bomb = ImageSpec.newBuilder().setBaseImage(DockerTesting.image())
                    .putEnv("NONCE", Long.toString(System.nanoTime()))
                    .addSteps(BuildStep.newBuilder().setRunCommands(RunCommandsStep.newBuilder().addCommands(forks)))
                    .build();
            List<String> bombLog = new CopyOnWriteArrayList<>();
            String bombRef = runtime.imageBuilder().build(bomb, ContentHash.of(bomb), bombLog::add);
            DockerTesting.docker("rmi", "-f", bombRef);
            String started = bombLog.stream().filter(l -> l.startsWith("STARTED ")).findFirst().orElseThrow();
            assertThat(Integer.parseInt(started.substring(8).strip())).isLessThan((int) DockerImageBuilder.PIDS_MAX);
        }
    }
}
