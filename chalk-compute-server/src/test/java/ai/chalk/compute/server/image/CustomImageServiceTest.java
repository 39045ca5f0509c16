package ai.chalk.compute.server.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.common.v1.LogEntry;
import ai.chalk.compute.proto.sandbox.v1.AddFileStep;
import ai.chalk.compute.proto.sandbox.v1.BuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.BuildCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.CustomImageBuildSummary;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.DockerfileCommandsStep;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildLogsRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildLogsResponse;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildResponse;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildWorkflowRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsRequest;
import ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsResponse;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesRequest;
import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesResponse;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.EventCollector;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import com.google.protobuf.ByteString;
import com.google.protobuf.util.Timestamps;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CustomImageService on the docker runtime, through a real server (in-process; one test over TCP) and a real Docker
 * engine building busybox-based images: the cache, concurrent requests, failures, live updates, logs, validation.
 */
@Tag("alone")
class CustomImageServiceTest {

    private static final Duration BUILD_TIMEOUT = Duration.ofMinutes(2);

    @TempDir
    static Path dataDir;

    static RunningServer server;
    static ManagedChannel inProcess;

    @BeforeAll
    static void start() throws Exception {
        server = RunningServer.start(
                dataDir,
                b -> b.runtime(DockerRuntimeOptions.builder()
                        .defaultImage(DockerTesting.image())
                        .build()));
        inProcess =
                InProcessChannelBuilder.forName(server.server.inProcessName()).build();
    }

    @AfterAll
    static void stop() throws Exception {
        inProcess.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.close();
        ImageTesting.removeBuilt();
    }

    private static CustomImageServiceGrpc.CustomImageServiceBlockingStub images() {
        return CustomImageServiceGrpc.newBlockingStub(inProcess).withDeadlineAfter(2, TimeUnit.MINUTES);
    }

    private static GetOrBuildCustomImageResponse getOrBuild(ImageSpec spec) {
        return images().getOrBuildCustomImage(GetOrBuildCustomImageRequest.newBuilder()
                .setImageSpec(spec)
                .build());
    }

    private static List<CustomImageBuildSummary> buildsOf(String contentHash) {
        List<CustomImageBuildSummary> all = new ArrayList<>();
        String cursor = "";
        do {
            ListCustomImageBuildsResponse page = images().listCustomImageBuilds(
                            ListCustomImageBuildsRequest.newBuilder()
                                    .setLimit(3)
                                    .setCursor(cursor)
                                    .build());
            all.addAll(page.getBuildsList());
            cursor = page.hasNextCursor() ? page.getNextCursor() : "";
        } while (!cursor.isEmpty());
        return all.stream().filter(b -> b.getContentHash().equals(contentHash)).toList();
    }

    @Test
    void aBuiltSpecIsAnsweredExistsWithoutBuildingAgain() throws Exception {
        ImageSpec spec = ImageTesting.busybox("echo built > /built-marker");
        GetOrBuildCustomImageResponse first = getOrBuild(spec);
        assertThat(first.getStatus()).isEqualTo("building");
        assertThat(first.getImage()).isEmpty();
        GetCustomImageResponse done = ImageTesting.awaitFinished(images(), first.getBuildId(), BUILD_TIMEOUT);
        assertThat(done.getStatus()).as(done.getError()).isEqualTo("succeeded");
        String hash = ContentHash.of(spec);
        assertThat(done.getImage()).isEqualTo("chalk-compute/custom:" + hash.substring(0, 32));
        String created = ImageTesting.created(done.getImage());
        assertThat(DockerTesting.docker(
                                "image",
                                "inspect",
                                "--format",
                                "{{ index .Config.Labels \"ai.chalk.compute.image.content-hash\" }}",
                                done.getImage())
                        .output()
                        .trim())
                .isEqualTo(hash);

        GetOrBuildCustomImageResponse again = getOrBuild(spec);
        assertThat(again.getStatus()).isEqualTo("exists");
        assertThat(again.getBuildId()).isEqualTo(first.getBuildId());
        assertThat(again.getImage()).isEqualTo(done.getImage());
        assertThat(buildsOf(hash)).hasSize(1);
        assertThat(ImageTesting.created(done.getImage()))
                .as("the image was not rebuilt")
                .isEqualTo(created);

        // the build as recorded, by content hash, with its spec
        GetCustomImageBuildResponse build = images().getCustomImageBuild(GetCustomImageBuildRequest.newBuilder()
                .setContentHash(hash)
                .build());
        assertThat(build.getBuild().getBuildId()).isEqualTo(first.getBuildId());
        assertThat(build.getBuild().getStatus()).isEqualTo("succeeded");
        assertThat(build.getBuild().getBaseImage()).isEqualTo(DockerTesting.image());
        assertThat(build.getImageSpec()).isEqualTo(spec);

        // an image removed behind the server's back is built again, under a new build id
        DockerTesting.docker("image", "rm", "-f", done.getImage());
        GetOrBuildCustomImageResponse rebuilt = getOrBuild(spec);
        assertThat(rebuilt.getStatus()).isEqualTo("building");
        assertThat(rebuilt.getBuildId()).isNotEqualTo(first.getBuildId());
        assertThat(ImageTesting.awaitFinished(images(), rebuilt.getBuildId(), BUILD_TIMEOUT)
                        .getStatus())
                .isEqualTo("succeeded");
    }

    @Test
    void concurrentRequestsForOneSpecShareOneBuild() throws Exception {
        ImageSpec spec = ImageTesting.busybox("sleep 2", "echo slow > /slow");
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Callable<GetOrBuildCustomImageResponse>> calls = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                calls.add(() -> getOrBuild(spec));
            }
            List<GetOrBuildCustomImageResponse> answers = new ArrayList<>();
            for (Future<GetOrBuildCustomImageResponse> f : pool.invokeAll(calls)) {
                answers.add(f.get());
            }
            Set<String> ids = answers.stream()
                    .map(GetOrBuildCustomImageResponse::getBuildId)
                    .collect(Collectors.toSet());
            assertThat(ids).hasSize(1);
            assertThat(answers).allMatch(a -> a.getStatus().equals("building"));
            assertThat(ImageTesting.awaitFinished(images(), ids.iterator().next(), BUILD_TIMEOUT)
                            .getStatus())
                    .isEqualTo("succeeded");
            assertThat(buildsOf(ContentHash.of(spec))).hasSize(1);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aFailingStepIsReportedWithItsOutputEverywhere() throws Exception {
        ImageSpec spec = ImageTesting.busybox("echo fine", "echo about to fail; echo the-reason >&2; exit 3");
        String id = getOrBuild(spec).getBuildId();
        EventCollector<StreamCustomImageBuildUpdatesResponse> updates = new EventCollector<>();
        CustomImageServiceGrpc.newStub(inProcess)
                .streamCustomImageBuildUpdates(
                        StreamCustomImageBuildUpdatesRequest.newBuilder()
                                .setBuildId(id)
                                .build(),
                        updates);

        GetCustomImageResponse done = ImageTesting.awaitFinished(images(), id, BUILD_TIMEOUT);
        assertThat(done.getStatus()).isEqualTo("failed");
        assertThat(done.getImage()).isEmpty();
        assertThat(done.getError())
                .startsWith("steps[0] (run_commands[1]: echo about to fail; echo the-reason >&2;"
                        + " exit 3) failed: The command '/bin/sh -c echo about to fail; echo the-reason >&2; exit 3' returned"
                        + " a non-zero code: 3");
        // the engine merges the step's stdout and stderr, so the two lines may come in either order
        assertThat(done.getError()
                        .substring(done.getError().indexOf("\nLast output:\n") + "\nLast output:\n".length())
                        .lines())
                .containsExactlyInAnyOrder("about to fail", "the-reason");

        List<StreamCustomImageBuildUpdatesResponse> streamed = updates.drain(Duration.ofSeconds(30));
        assertThat(updates.end.join()).isNull();
        StreamCustomImageBuildUpdatesResponse last = streamed.get(streamed.size() - 1);
        assertThat(last.getStatus()).isEqualTo("failed");
        assertThat(last.getError()).isEqualTo(done.getError());
        assertThat(streamed.stream().map(StreamCustomImageBuildUpdatesResponse::getMessage))
                .contains("the-reason");

        List<LogEntry> logs = images().getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                        .setBuildId(id)
                        .build())
                .getLogsList();
        assertThat(logs).extracting(LogEntry::getMessage).contains("about to fail", "the-reason");
        LogEntry failure = logs.get(logs.size() - 1);
        assertThat(failure.getSeverity()).isEqualTo("ERROR");
        assertThat(failure.getMessage()).isEqualTo("Build failed: " + done.getError());

        // a failed spec is tried again by the next request, under a new build id
        GetOrBuildCustomImageResponse retry = getOrBuild(spec);
        assertThat(retry.getStatus()).isEqualTo("building");
        assertThat(retry.getBuildId()).isNotEqualTo(id);
        assertThat(ImageTesting.awaitFinished(images(), retry.getBuildId(), BUILD_TIMEOUT)
                        .getStatus())
                .isEqualTo("failed");
    }

    @Test
    void theStreamOfARunningBuildDeliversLinesAsTheyComeThenTheFinalStatus() throws Exception {
        ImageSpec spec = ImageTesting.busybox("for i in 1 2 3; do echo tick-$i; sleep 1; done");
        String id = getOrBuild(spec).getBuildId();
        EventCollector<StreamCustomImageBuildUpdatesResponse> updates = new EventCollector<>();
        CustomImageServiceGrpc.newStub(inProcess)
                .streamCustomImageBuildUpdates(
                        StreamCustomImageBuildUpdatesRequest.newBuilder()
                                .setBuildId(id)
                                .build(),
                        updates);
        updates.await(u -> u.getMessage().equals("tick-1"), BUILD_TIMEOUT);
        long firstTick = System.nanoTime();
        assertThat(images().getCustomImage(GetCustomImageRequest.newBuilder()
                                .setBuildId(id)
                                .build())
                        .getStatus())
                .as("the build still runs when its first line arrives")
                .isEqualTo("building");
        StreamCustomImageBuildUpdatesResponse last =
                updates.await(u -> !u.getStatus().equals("building"), BUILD_TIMEOUT);
        assertThat(Duration.ofNanos(System.nanoTime() - firstTick)).isGreaterThan(Duration.ofMillis(1500));
        assertThat(last.getStatus()).isEqualTo("succeeded");
        assertThat(last.getImage()).startsWith("chalk-compute/custom:");
        ImageTesting.built(last.getImage());
        assertThat(updates.all)
                .extracting(StreamCustomImageBuildUpdatesResponse::getMessage)
                .containsSubsequence("tick-1", "tick-2", "tick-3");
        assertThat(updates.drain(Duration.ofSeconds(10))).last().isEqualTo(last);

        // a later stream of the finished build replays the same lines and the same end
        EventCollector<StreamCustomImageBuildUpdatesResponse> replay = new EventCollector<>();
        CustomImageServiceGrpc.newStub(inProcess)
                .streamCustomImageBuildUpdates(
                        StreamCustomImageBuildUpdatesRequest.newBuilder()
                                .setBuildId(id)
                                .build(),
                        replay);
        assertThat(replay.drain(Duration.ofSeconds(30))).isEqualTo(updates.all);
    }

    /**
     * A step that prints 20 MB keeps at most the log's bound of it in the server's store (which never shrinks), says
     * so once, and the build goes on: before, every line was stored, for as long as the step printed.
     */
    @Test
    void aBuildsLogKeepsAtMostItsBoundOfOutput() throws Exception {
        ImageSpec spec = ImageTesting.busybox(
                "i=0; while [ $i -lt 5000 ]; do printf '%04000d\\n' $i; i=$((i+1)); done", "echo after-the-flood");
        String id = getOrBuild(spec).getBuildId();
        assertThat(ImageTesting.awaitFinished(images(), id, BUILD_TIMEOUT).getStatus())
                .isEqualTo("succeeded");
        List<LogEntry> all = new ArrayList<>();
        String token = "";
        do {
            GetCustomImageBuildLogsResponse page = images().getCustomImageBuildLogs(
                            GetCustomImageBuildLogsRequest.newBuilder()
                                    .setBuildId(id)
                                    .setLimit(1000)
                                    .setPageToken(token)
                                    .build());
            all.addAll(page.getLogsList());
            token = page.hasNextPageToken() ? page.getNextPageToken() : "";
        } while (!token.isEmpty());
        long chars = all.stream().mapToLong(e -> e.getMessage().length() + 1).sum();
        assertThat(chars).isLessThanOrEqualTo(BuildCache.LOG_LIMIT_CHARS + 2 * BuildCache.CLIPPED.length() + 1024);
        assertThat(all).extracting(LogEntry::getMessage).contains(BuildCache.CLIPPED);
        assertThat(all.size()).isLessThan(5000);
    }

    @Test
    void logsArePagedAndFilteredByTime() throws Exception {
        ImageSpec spec = ImageTesting.busybox("seq 1 40");
        String id = getOrBuild(spec).getBuildId();
        assertThat(ImageTesting.awaitFinished(images(), id, BUILD_TIMEOUT).getStatus())
                .isEqualTo("succeeded");
        List<LogEntry> all = images().getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                        .setBuildId(id)
                        .build())
                .getLogsList();
        assertThat(all).extracting(LogEntry::getMessage).containsSubsequence("1", "2", "39", "40");
        assertThat(all).allSatisfy(e -> {
            assertThat(e.getLabelsMap()).containsEntry("build_id", id);
            assertThat(e.getTimestamp().getSeconds()).isPositive();
        });

        List<LogEntry> paged = new ArrayList<>();
        String token = "";
        int pages = 0;
        do {
            GetCustomImageBuildLogsResponse page = images().getCustomImageBuildLogs(
                            GetCustomImageBuildLogsRequest.newBuilder()
                                    .setContentHash(ContentHash.of(spec))
                                    .setLimit(7)
                                    .setPageToken(token)
                                    .build());
            assertThat(page.getLogsCount()).isLessThanOrEqualTo(7);
            paged.addAll(page.getLogsList());
            token = page.hasNextPageToken() ? page.getNextPageToken() : "";
            pages++;
        } while (!token.isEmpty());
        assertThat(paged).isEqualTo(all);
        assertThat(pages).isEqualTo((all.size() + 6) / 7);

        var before = all.get(0).getTimestamp();
        assertThat(images().getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                                .setBuildId(id)
                                .setEndTime(before)
                                .build())
                        .getLogsList())
                .isEmpty();
        var middle = all.get(all.size() / 2).getTimestamp();
        List<LogEntry> later = images().getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                        .setBuildId(id)
                        .setStartTime(middle)
                        .build())
                .getLogsList();
        assertThat(later).isNotEmpty().allMatch(e -> Timestamps.compare(e.getTimestamp(), middle) >= 0);
        assertThat(later.get(later.size() - 1)).isEqualTo(all.get(all.size() - 1));

        assertThatThrownBy(() -> images().getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                        .setBuildId(id)
                        .setPageToken("not-a-token")
                        .build()))
                .hasMessageContaining("INVALID_ARGUMENT: page_token \"not-a-token\"");
    }

    @Test
    void badRequestsGetTheRightStatusAndTheServerKeepsServing() {
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder().build()),
                Status.Code.INVALID_ARGUMENT,
                "image_spec.base_image is required");
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .addSteps(BuildStep.newBuilder()
                                .setAddFile(AddFileStep.newBuilder()
                                        .setDestination("../../etc/x")
                                        .setContent(ByteString.copyFromUtf8("x"))))
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "image_spec.steps[0].add_file.destination \"../../etc/x\" leads above");
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .addSteps(BuildStep.newBuilder()
                                .setAddFile(AddFileStep.newBuilder()
                                        .setDestination("/etc/")
                                        .setContent(ByteString.copyFromUtf8("x"))))
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "add_file.destination \"/etc/\" names a directory");
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .addSteps(BuildStep.newBuilder()
                                .setAddFile(AddFileStep.newBuilder()
                                        .setDestination("/x")
                                        .setMode(010000)))
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "image_spec.steps[0].add_file.mode 010000");
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .addSteps(BuildStep.getDefaultInstance())
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "image_spec.steps[0] sets no step");
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .putEnv("A", "x".repeat(40_000))
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "image_spec.env[A] is 40000 characters");
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .setWorkdir("app")
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "image_spec.workdir \"app\" must be an absolute path");
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .addSteps(BuildStep.newBuilder()
                                .setDockerfileCommands(DockerfileCommandsStep.newBuilder()
                                        .addCommands("RUN --mount=type=cache,target=/root/.cache true")))
                        .build()),
                Status.Code.FAILED_PRECONDITION,
                "image_spec.steps[0].dockerfile_commands[0] uses --mount");
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .addSteps(BuildStep.newBuilder()
                                .setDockerfileCommands(DockerfileCommandsStep.newBuilder()
                                        .addCommands("ADD http://127.0.0.1:9/secret /secret")))
                        .build()),
                Status.Code.FAILED_PRECONDITION,
                "image_spec.steps[0].dockerfile_commands[0] ADDs \"http://127.0.0.1");
        assertStatus(
                () -> getOrBuild(ImageSpec.newBuilder()
                        .setBaseImage(DockerTesting.image())
                        .addSteps(BuildStep.newBuilder()
                                .setDockerfileCommands(DockerfileCommandsStep.newBuilder()
                                        .addCommands("COPY --from=chalk-compute/custom:x / /stolen")))
                        .build()),
                Status.Code.FAILED_PRECONDITION,
                "image_spec.steps[0].dockerfile_commands[0] COPYs from another image");
        assertStatus(
                () -> images().getOrBuildCustomImage(GetOrBuildCustomImageRequest.newBuilder()
                        .setImageSpec(ImageTesting.busybox("true"))
                        .setTargetRegistry("registry.example.com/team")
                        .build()),
                Status.Code.FAILED_PRECONDITION,
                "this server has no image registry");
        assertStatus(
                () -> images().buildCustomImage(BuildCustomImageRequest.newBuilder()
                        .setImageSpec(ImageTesting.busybox("true"))
                        .setTag("Not A Tag")
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "tag \"Not A Tag\" is not an image name");
        assertStatus(
                () -> images().getCustomImage(GetCustomImageRequest.newBuilder()
                        .setBuildId("nope")
                        .build()),
                Status.Code.NOT_FOUND,
                "image build nope does not exist");
        assertStatus(
                () -> images().getCustomImageBuildWorkflow(GetCustomImageBuildWorkflowRequest.newBuilder()
                        .setBuildId("nope")
                        .build()),
                Status.Code.NOT_FOUND,
                "image build nope does not exist");
        assertStatus(
                () -> images().getCustomImageBuild(GetCustomImageBuildRequest.getDefaultInstance()),
                Status.Code.INVALID_ARGUMENT,
                "give build_id or content_hash");
        EventCollector<StreamCustomImageBuildUpdatesResponse> unknown = new EventCollector<>();
        CustomImageServiceGrpc.newStub(inProcess)
                .streamCustomImageBuildUpdates(
                        StreamCustomImageBuildUpdatesRequest.newBuilder()
                                .setBuildId("nope")
                                .build(),
                        unknown);
        assertThat(Status.fromThrowable(unknown.end.join()).getCode()).isEqualTo(Status.Code.NOT_FOUND);
        // still serving
        assertThat(images().listCustomImageBuilds(ListCustomImageBuildsRequest.getDefaultInstance()))
                .isNotNull();
    }

    @Test
    void buildForcesANewBuildAppliesTheTagAndAKnownBuildHasNoWorkflow() throws Exception {
        ImageSpec spec = ImageTesting.busybox("echo tagged");
        String tag = "chalk-compute-test/tagged-" + Long.toHexString(System.nanoTime()) + ":v1";
        ImageTesting.built(tag);
        BuildCustomImageResponse first = images().buildCustomImage(
                        BuildCustomImageRequest.newBuilder().setImageSpec(spec).build());
        BuildCustomImageResponse joined = images().buildCustomImage(BuildCustomImageRequest.newBuilder()
                .setImageSpec(spec)
                .setTag(tag)
                .build());
        assertThat(joined.getBuildId())
                .as("a build of the spec is running: it is returned")
                .isEqualTo(first.getBuildId());
        GetCustomImageResponse done = ImageTesting.awaitFinished(images(), first.getBuildId(), BUILD_TIMEOUT);
        assertThat(done.getStatus()).isEqualTo("succeeded");

        BuildCustomImageResponse forced = images().buildCustomImage(BuildCustomImageRequest.newBuilder()
                .setImageSpec(spec)
                .setTag(tag)
                .build());
        assertThat(forced.getBuildId()).isNotEqualTo(first.getBuildId());
        assertThat(ImageTesting.awaitFinished(images(), forced.getBuildId(), BUILD_TIMEOUT)
                        .getStatus())
                .isEqualTo("succeeded");
        assertThat(DockerTesting.docker("image", "inspect", ImageNames.engineTag(Caller.DEFAULT_ENVIRONMENT, tag))
                        .code())
                .as("tagged %s in the environment", tag)
                .isZero();
        assertThat(DockerTesting.docker("image", "inspect", tag).code())
                .as("no engine-wide name %s", tag)
                .isNotZero();
        assertThat(buildsOf(ContentHash.of(spec)))
                .extracting(CustomImageBuildSummary::getBuildId)
                .containsExactly(forced.getBuildId(), first.getBuildId());

        assertThat(images().getCustomImageBuildWorkflow(GetCustomImageBuildWorkflowRequest.newBuilder()
                                .setBuildId(first.getBuildId())
                                .build())
                        .hasWorkflow())
                .isFalse();
    }

    @Test
    void aTagIsItsEnvironmentsAndNoEnvironmentRunsAnothersBuilds() throws Exception {
        // an image both environments run by name (as they would debian:bookworm-slim or the workers' Java)
        String shared = "chalk-compute-test/shared-" + Long.toHexString(System.nanoTime()) + ":v1";
        assertThat(DockerTesting.docker("tag", DockerTesting.image(), shared).code())
                .isZero();
        ImageTesting.built(shared);
        ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
        ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
        try {
            // dev builds an image of its own and tags it with the shared name
            var devImages = CustomImageServiceGrpc.newBlockingStub(dev).withDeadlineAfter(2, TimeUnit.MINUTES);
            BuildCustomImageResponse build = devImages.buildCustomImage(BuildCustomImageRequest.newBuilder()
                    .setImageSpec(ImageTesting.busybox("echo dev > /tagged-by"))
                    .setTag(shared)
                    .build());
            GetCustomImageResponse done = ImageTesting.awaitFinished(devImages, build.getBuildId(), BUILD_TIMEOUT);
            assertThat(done.getStatus()).isEqualTo("succeeded");
            ImageTesting.built(ImageNames.engineTag("dev", shared));

            assertThat(taggedBy(prod, shared))
                    .as("prod runs the image the name had, not dev's")
                    .isEqualTo("none");
            assertThat(taggedBy(dev, shared))
                    .as("dev runs its own tag of the name")
                    .isEqualTo("dev");
            // prod cannot run dev's build by the names the server gave it, however they are spelt
            DockerTesting.Result id = DockerTesting.docker("image", "inspect", "--format", "{{.Id}}", done.getImage());
            assertThat(id.code()).as(id.output()).isZero();
            String hex = id.output().trim().substring("sha256:".length());
            for (String devs : List.of(
                    done.getImage(),
                    ImageNames.engineTag("dev", shared),
                    "docker.io/" + done.getImage(),
                    "docker.io/" + ImageNames.engineTag("dev", shared),
                    "sha256:" + hex,
                    hex.substring(0, 12))) {
                assertThatThrownBy(() -> createFrom(prod, devs))
                        .as("prod creating a sandbox of %s", devs)
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
                            assertThat(e.getStatus().getDescription()).contains("in this environment");
                        });
            }
            assertThat(taggedBy(dev, done.getImage()))
                    .as("dev runs its build by its name")
                    .isEqualTo("dev");
        } finally {
            dev.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            prod.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    /** Creates a sandbox of {@code image} in the channel's environment; its id. */
    private static String createFrom(ManagedChannel channel, String image) {
        return SandboxServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(2, TimeUnit.MINUTES)
                .createSandbox(CreateSandboxRequest.newBuilder().setImage(image).build())
                .getSandbox()
                .getId();
    }

    /** Who tagged the image a sandbox of {@code image} runs: what its {@code /tagged-by} says, or "none". */
    private static String taggedBy(ManagedChannel channel, String image) {
        String id = createFrom(channel, image);
        try {
            return RunningServer.sh(channel, id, "cat /tagged-by 2>/dev/null || echo none")
                    .getStdout()
                    .toStringUtf8()
                    .trim();
        } finally {
            SandboxServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(1, TimeUnit.MINUTES)
                    .terminateSandbox(TerminateSandboxRequest.newBuilder()
                            .setSandboxId(id)
                            .build());
        }
    }

    @Test
    void overTcpTheSameServiceAnswers() throws Exception {
        var tcp = CustomImageServiceGrpc.newBlockingStub(server.channel).withDeadlineAfter(2, TimeUnit.MINUTES);
        ImageSpec spec = ImageTesting.busybox("echo over-tcp");
        GetOrBuildCustomImageResponse first = tcp.getOrBuildCustomImage(
                GetOrBuildCustomImageRequest.newBuilder().setImageSpec(spec).build());
        assertThat(ImageTesting.awaitFinished(tcp, first.getBuildId(), BUILD_TIMEOUT)
                        .getStatus())
                .isEqualTo("succeeded");
        GetOrBuildCustomImageResponse again = tcp.getOrBuildCustomImage(
                GetOrBuildCustomImageRequest.newBuilder().setImageSpec(spec).build());
        assertThat(again.getStatus()).isEqualTo("exists");
        assertThat(again.getBuildId()).isEqualTo(first.getBuildId());
    }

    private static void assertStatus(Runnable call, Status.Code code, String message) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(code);
            assertThat(e.getStatus().getDescription()).contains(message);
        });
    }
}
