package ai.chalk.compute.image;

import ai.chalk.compute.error.ImageBuildFailedException;
import ai.chalk.compute.error.ImageBuildNotFoundException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.proto.sandbox.v1.BuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.BuildCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildLogsRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildLogsResponse;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsRequest;
import ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsResponse;
import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesRequest;
import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesResponse;
import io.grpc.Channel;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's image builds: build {@link Image}s, find and list builds, read their logs. Get it from
 * {@code SandboxClient#images()}; sandboxes created from an {@code Image} use it to build first.
 *
 * <pre>{@code
 * Image image = Image.debianSlim().aptInstall("tmux");
 * ImageBuild build = client.images().getOrBuild(image);   // shows the build's progress while it runs
 * if (build.status() == ImageBuildStatus.FAILED) {
 *     client.images().logs(build.buildId()).forEach(line -> System.out.println(line.message()));
 * }
 * }</pre>
 *
 * <p>The server keeps built images by {@link Image#contentHash()}: asking again for an image with the same content
 * returns the earlier build ({@link ImageBuildStatus#EXISTS}) without building. Builds show in the progress display
 * (stderr, see {@link ProgressDisplay}) while they run. A failed build is a result, not an exception: its
 * {@link ImageBuild#error()} names the failing step.
 */
public final class Images {

    private static final Logger log = LoggerFactory.getLogger(Images.class);

    private final CustomImageServiceGrpc.CustomImageServiceBlockingStub stub;
    private final ProgressDisplay progress;

    /**
     * The image builds of the server behind {@code channel}; the channel stays the caller's.
     *
     * @param channel  the connection
     * @param progress where builds show while they run
     */
    public Images(Channel channel, ProgressDisplay progress) {
        this.stub = CustomImageServiceGrpc.newBlockingStub(Objects.requireNonNull(channel, "channel"));
        this.progress = Objects.requireNonNull(progress, "progress");
    }

    /**
     * The image built from {@code image}: at once when the server has it (status {@link ImageBuildStatus#EXISTS}),
     * else after building it (or after the build of the same image already running), showing the build's progress.
     *
     * @param image the image
     * @return the finished build: {@link ImageBuildStatus#EXISTS}, {@link ImageBuildStatus#SUCCEEDED} or
     *         {@link ImageBuildStatus#FAILED}
     * @throws ai.chalk.compute.error.InvalidRequestException when the server refuses the image (the message names
     *                                                        the field)
     */
    public ImageBuild getOrBuild(Image image) {
        Objects.requireNonNull(image, "image");
        GetOrBuildCustomImageResponse r = ServerCall.run(
                ResourceKind.IMAGE_BUILD,
                () -> stub.getOrBuildCustomImage(GetOrBuildCustomImageRequest.newBuilder()
                        .setImageSpec(image.toSpec())
                        .build()));
        ImageBuild build = new ImageBuild(
                r.getBuildId(),
                ImageBuildStatus.fromWire(r.getStatus()),
                r.getImage(),
                r.hasError() && !r.getError().isEmpty() ? Optional.of(r.getError()) : Optional.empty());
        if (build.status() != ImageBuildStatus.BUILDING) {
            log.info(
                    "Image on {}: {} (build {})",
                    image.baseImage(),
                    build.status().name().toLowerCase(Locale.ROOT),
                    build.buildId());
            return build;
        }
        return follow(build.buildId(), image.baseImage());
    }

    /**
     * Builds {@code image} anew, even when the server has it, and waits for the build, showing its progress. When a
     * build of the same image is running, that build is the one waited for.
     *
     * @param image the image
     * @return the finished build: {@link ImageBuildStatus#SUCCEEDED} or {@link ImageBuildStatus#FAILED}
     */
    public ImageBuild build(Image image) {
        return build(image, null);
    }

    /**
     * Builds {@code image} anew and gives it another name in this environment, for example {@code "my-team/app:v1"}:
     * sandboxes, replicas and function workers of this environment that name that image run this build (other
     * environments do not see the name); see {@link #build(Image)}.
     *
     * @param image the image
     * @param tag   {@code repository[:tag]} in lower case, or {@code null} for none
     * @return the finished build
     * @throws ai.chalk.compute.error.InvalidRequestException when the tag is not an image name
     */
    public ImageBuild build(Image image, String tag) {
        Objects.requireNonNull(image, "image");
        BuildCustomImageRequest.Builder request =
                BuildCustomImageRequest.newBuilder().setImageSpec(image.toSpec());
        if (tag != null) {
            request.setTag(tag);
        }
        BuildCustomImageResponse r =
                ServerCall.run(ResourceKind.IMAGE_BUILD, () -> stub.buildCustomImage(request.build()));
        return follow(r.getBuildId(), image.baseImage());
    }

    /**
     * The image of {@code image}, for creating a sandbox from it: built as {@link #getOrBuild(Image)} does.
     *
     * @param image the image
     * @return the ready build
     * @throws ImageBuildFailedException when the build failed, with its id and the failing step's output
     */
    public ImageBuild require(Image image) {
        ImageBuild build = getOrBuild(image);
        if (!build.status().ready()) {
            throw new ImageBuildFailedException(
                    build.buildId(),
                    build.error()
                            .orElse("the build ended with status "
                                    + build.status().name().toLowerCase(Locale.ROOT)));
        }
        return build;
    }

    /**
     * A build as it is now.
     *
     * @param buildId the build's id
     * @return the build
     * @throws ImageBuildNotFoundException when the server does not know the id
     */
    public ImageBuild get(String buildId) {
        GetCustomImageResponse r = ServerCall.run(
                ResourceKind.IMAGE_BUILD,
                () -> stub.getCustomImage(GetCustomImageRequest.newBuilder()
                        .setBuildId(Objects.requireNonNull(buildId, "buildId"))
                        .build()));
        return new ImageBuild(
                r.getBuildId(),
                ImageBuildStatus.fromWire(r.getStatus()),
                r.getImage(),
                r.hasError() && !r.getError().isEmpty() ? Optional.of(r.getError()) : Optional.empty());
    }

    /**
     * Every line a build has logged so far, in order (all pages).
     *
     * @param buildId the build's id
     * @return the lines
     * @throws ImageBuildNotFoundException when the server does not know the id
     */
    public List<BuildLogLine> logs(String buildId) {
        Objects.requireNonNull(buildId, "buildId");
        List<BuildLogLine> lines = new ArrayList<>();
        String token = "";
        do {
            String pageToken = token;
            GetCustomImageBuildLogsResponse page = ServerCall.run(
                    ResourceKind.IMAGE_BUILD,
                    () -> stub.getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                            .setBuildId(buildId)
                            .setLimit(1000)
                            .setPageToken(pageToken)
                            .build()));
            page.getLogsList()
                    .forEach(e ->
                            lines.add(new BuildLogLine(instant(e.getTimestamp()), e.getSeverity(), e.getMessage())));
            token = page.hasNextPageToken() ? page.getNextPageToken() : "";
        } while (!token.isEmpty());
        return lines;
    }

    /**
     * Every build the server knows, newest first (all pages).
     *
     * @return the builds
     */
    public List<ImageBuildSummary> list() {
        List<ImageBuildSummary> builds = new ArrayList<>();
        String cursor = "";
        do {
            String pageCursor = cursor;
            ListCustomImageBuildsResponse page = ServerCall.run(
                    ResourceKind.IMAGE_BUILD,
                    () -> stub.listCustomImageBuilds(ListCustomImageBuildsRequest.newBuilder()
                            .setLimit(500)
                            .setCursor(pageCursor)
                            .build()));
            page.getBuildsList()
                    .forEach(b -> builds.add(new ImageBuildSummary(
                            b.getBuildId(),
                            b.getContentHash(),
                            ImageBuildStatus.fromWire(b.getStatus()),
                            b.getImageRef(),
                            b.getBaseImage(),
                            instant(b.getCreatedAt()))));
            cursor = page.hasNextCursor() ? page.getNextCursor() : "";
        } while (!cursor.isEmpty());
        return builds;
    }

    /** Follows a running build to its end, showing it, and returns how it ended. */
    private ImageBuild follow(String buildId, String baseImage) {
        StreamCustomImageBuildUpdatesResponse last = null;
        try (BuildProgress shown = new BuildProgress(progress, baseImage)) {
            Iterator<StreamCustomImageBuildUpdatesResponse> updates = ServerCall.run(
                    ResourceKind.IMAGE_BUILD,
                    () -> stub.streamCustomImageBuildUpdates(StreamCustomImageBuildUpdatesRequest.newBuilder()
                            .setBuildId(buildId)
                            .build()));
            while (ServerCall.run(ResourceKind.IMAGE_BUILD, updates::hasNext)) {
                last = updates.next();
                shown.update(last);
            }
        }
        if (last == null || ImageBuildStatus.fromWire(last.getStatus()) == ImageBuildStatus.BUILDING) {
            return get(buildId); // the stream ended early: ask where the build is
        }
        return new ImageBuild(
                buildId,
                ImageBuildStatus.fromWire(last.getStatus()),
                last.getImage(),
                last.hasError() && !last.getError().isEmpty() ? Optional.of(last.getError()) : Optional.empty());
    }

    private static Instant instant(com.google.protobuf.Timestamp t) {
        return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
    }
}
