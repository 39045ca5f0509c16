package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.image.BuildLimits;
import ai.chalk.compute.server.image.BuildLog;
import ai.chalk.compute.server.image.ImageBuildException;
import ai.chalk.compute.server.image.ImageBuilder;
import ai.chalk.compute.server.runtime.OutputLines;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.InspectImageResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.BuildResponseItem;
import com.github.dockerjava.transport.DockerHttpClient;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Builds image specs with the Docker Engine's build API (the classic builder, which every engine has): the
 * {@link DockerBuildContext} is sent as a tar, the image is tagged {@value #REPOSITORY}{@code :<first 32 hex of the
 * content hash>} and labelled {@value #LABEL_CONTENT_HASH} with the whole hash. The engine's output goes to the build
 * log line by line as it comes (without the builder's container and layer ids); a failing instruction is reported with
 * the spec step it came from and its last lines of output.
 *
 * <p><b>What a build may do.</b> The Dockerfile must pass {@link DockerfilePolicy} (no URL sources, no reading other
 * images), and so must the base image's {@code ONBUILD} triggers. Each step's container runs on the
 * {@link NetworkFence#BUILDS} network (internet yes; host, other containers, link-local no), with
 * {@value #MEMORY_BYTES} bytes of memory and no swap, {@value #CPU_QUOTA_MICROS} µs of cpu per 100 ms,
 * {@value #NOFILE} open files, and, where this host lets the runtime make cgroups, {@value #PIDS_MAX} processes at
 * most ({@link BuildGroup}). What the classic builder's API cannot set, capabilities and {@code no-new-privileges},
 * the build sets itself: every step runs through a {@link BuildShell} that gives root a sandbox's capabilities only
 * and everyone {@code no_new_privs} (where the host's helpers are missing, steps keep Docker's defaults and the build
 * log says so). Steps run under Docker's default seccomp profile, and never share a network with a sandbox.
 */
final class DockerImageBuilder implements ImageBuilder {

    /** Memory (and memory plus swap: no swap) of one build step's container. */
    static final long MEMORY_BYTES = BuildLimits.MEMORY_BYTES;
    /** CPU of one build step: two cores' worth of every 100 ms period. */
    static final long CPU_QUOTA_MICROS = BuildLimits.MILLI_CPUS * 100;
    /** Open files of a build step's processes. */
    static final long NOFILE = BuildLimits.OPEN_FILES;
    /** Processes of one build, all its steps together. */
    static final long PIDS_MAX = BuildLimits.PROCESSES;

    /** The repository of built images. */
    static final String REPOSITORY = "chalk-compute/custom";
    /** Label carrying a built image's full content hash. */
    static final String LABEL_CONTENT_HASH = "ai.chalk.compute.image.content-hash";
    /** How many lines of a failing step's output its error repeats. */
    static final int TAIL_LINES = 20;

    private static final Pattern STEP = Pattern.compile("^Step (\\d+)/(\\d+) : ");
    /** The classic builder's bookkeeping between steps (container and layer ids): not shown in the build log. */
    private static final Pattern PLUMBING = Pattern.compile(
            "^\\s*(---> (Running in )?[0-9a-f]{12}|Removing intermediate container [0-9a-f]{12}|Successfully built [0-9a-f]{12})\\s*$");
    /** Colour codes the classic builder writes after a command's output ({@code ESC[0m}); the log is plain text. */
    private static final Pattern SGR = Pattern.compile("\u001B\\[[0-9;]*m");

    private static final ObjectMapper JSON =
            new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    private final DockerClient client;
    private final DockerHttpClient http;
    private final NetworkFence fence;
    private final ExecutorService helpers;
    /** The shell every step goes through; empty when the host's helpers are unavailable (steps keep Docker's caps). */
    private final Optional<BuildShell> shell;

    DockerImageBuilder(
            DockerClient client,
            DockerHttpClient http,
            NetworkFence fence,
            ExecutorService helpers,
            Optional<BuildShell> shell) {
        this.shell = shell;
        this.client = client;
        this.http = http;
        this.fence = fence;
        this.helpers = helpers;
    }

    /** Refuses (FAILED_PRECONDITION, naming the step) a spec whose Dockerfile {@link DockerfilePolicy} forbids. */
    @Override
    public void check(ImageSpec spec) {
        DockerfilePolicy.refusal(DockerBuildContext.of(spec).lines()).ifPresent(why -> {
            throw ComputeException.refused(why);
        });
    }

    @Override
    public String build(ImageSpec spec, String contentHash, BuildLog log)
            throws ImageBuildException, InterruptedException {
        DockerBuildContext context = DockerBuildContext.of(spec, shell);
        Optional<String> refused = DockerfilePolicy.refusal(context.lines());
        if (refused.isPresent()) {
            // checked when asked; again here for builds resumed after a restart
            throw new ImageBuildException(refused.get());
        }
        checkTriggers(spec.getBaseImage().trim(), log);
        String ref = REPOSITORY + ":" + contentHash.substring(0, 32);
        Output output = new Output(context.instructions(), log);
        if (shell.isEmpty()) {
            log.line("Warning: this build's steps run with Docker's default capabilities and without no_new_privs:"
                    + " the server has no helpers to restrict them on this host");
        }
        String fenceProblem = fence.install();
        if (fenceProblem != null) {
            log.line("Warning: this build's steps may reach the host's own addresses: " + fenceProblem);
        }
        try (BuildGroup group =
                BuildGroup.create(contentHash.substring(0, 32), PIDS_MAX).orElse(null)) {
            if (group == null) {
                log.line("Warning: this build's steps have no process limit and no limit on terminals: the server"
                        + " cannot make cgroups for them on this host (it needs root on the engine's host)");
            }
            run(context, ref, contentHash, group, output);
        }
        output.flush();
        if (output.stopped != null) { // even where the steps ended on their own and the image was made
            removeQuietly(ref);
            throw new ImageBuildException(output.failure());
        }
        if (output.error != null) {
            throw new ImageBuildException(output.failure());
        }
        if (!exists(ref)) {
            throw new ImageBuildException("the Docker engine ended the build without an image"
                    + (output.failure != null ? ": " + DockerEngine.engineMessage(output.failure) : ""));
        }
        return ref;
    }

    /** Sends the build to the engine with every limit its API takes, and streams its output into {@code output}. */
    private void run(DockerBuildContext context, String ref, String contentHash, BuildGroup group, Output output)
            throws ImageBuildException, InterruptedException {
        StringBuilder query = new StringBuilder("/build?rm=1&forcerm=1&pull=0")
                .append("&t=")
                .append(encode(ref))
                .append("&labels=")
                .append(encode(json(Map.of(LABEL_CONTENT_HASH, contentHash))))
                .append("&networkmode=")
                .append(encode(NetworkFence.BUILDS))
                .append("&memory=")
                .append(MEMORY_BYTES)
                .append("&memswap=")
                .append(MEMORY_BYTES)
                .append("&cpuperiod=100000&cpuquota=")
                .append(CPU_QUOTA_MICROS)
                .append("&ulimits=")
                .append(encode(json(List.of(Map.of("Name", "nofile", "Soft", NOFILE, "Hard", NOFILE)))));
        if (group != null) {
            query.append("&cgroupparent=").append(encode(group.cgroupParent()));
        }
        DockerHttpClient.Request request = DockerHttpClient.Request.builder()
                .method(DockerHttpClient.Request.Method.POST)
                .path(query.toString())
                .putHeader("Content-Type", "application/x-tar")
                .bodyBytes(context.tar())
                .build();
        DockerHttpClient.Response response;
        try {
            response = http.execute(request);
        } catch (RuntimeException e) {
            throw new ImageBuildException("the Docker engine refused the build: " + DockerEngine.engineMessage(e), e);
        }
        Future<?> reading = helpers.submit(() -> {
            try (response) {
                if (response.getStatusCode() / 100 != 2) {
                    String body = new String(response.getBody().readAllBytes(), StandardCharsets.UTF_8);
                    output.onError(new IOException("status " + response.getStatusCode() + ": " + body));
                    return null;
                }
                try (MappingIterator<BuildResponseItem> items =
                        JSON.readerFor(BuildResponseItem.class).readValues(response.getBody())) {
                    while (items.hasNextValue()) {
                        output.onNext(items.nextValue());
                    }
                }
            } catch (IOException | RuntimeException e) {
                output.onError(e);
            }
            return null;
        });
        try {
            while (true) {
                try {
                    reading.get(1, TimeUnit.SECONDS);
                    break;
                } catch (TimeoutException running) {
                    if (group != null && stopOverTerminals(group, output)) {
                        response.close(); // the engine cancels the build, and with it the step's container
                    }
                }
            }
        } catch (InterruptedException e) {
            response.close(); // the engine stops the build when its client goes
            reading.cancel(true);
            throw e;
        } catch (ExecutionException e) {
            throw new ImageBuildException(
                    "reading the Docker engine's build output failed: " + e.getCause(), e.getCause());
        }
    }

    /** Removes an image the build made but must not keep; one left behind is only disk. */
    private void removeQuietly(String ref) {
        try {
            client.removeImageCmd(ref).withForce(true).exec();
        } catch (RuntimeException e) {
            // not made, or already gone
        }
    }

    /**
     * Stops the build, killing its steps' processes, once they hold more terminals than a build may
     * ({@link BuildTerminals}): the step fails, and the build's error says why. Returns whether it did, for the engine
     * to be told as well.
     */
    private static boolean stopOverTerminals(BuildGroup group, Output output) {
        int held = BuildTerminals.held(group, SandboxDevices.PTYS);
        if (held <= SandboxDevices.PTYS) {
            return false;
        }
        output.stop(BuildTerminals.stopped(held));
        for (long pid : group.processes()) {
            // the handle keeps the process's start time, and a kill checks it: a pid given to another process after
            // the check below is not killed
            ProcessHandle.of(pid).filter(p -> group.holds(pid)).ifPresent(ProcessHandle::destroyForcibly);
        }
        return true;
    }

    /**
     * Refuses a base image whose {@code ONBUILD} triggers {@link DockerfilePolicy} forbids (the engine would run
     * them first); pulls the base image when the engine lacks it, to read them.
     */
    private void checkTriggers(String baseImage, BuildLog log) throws ImageBuildException {
        InspectImageResponse inspected;
        try {
            inspected = client.inspectImageCmd(baseImage).exec();
        } catch (NotFoundException e) {
            log.line("Pulling " + baseImage);
            Optional<String> failed = ImagePull.pull(client, baseImage, Duration.ofMinutes(10));
            if (failed.isPresent()) {
                throw new ImageBuildException("the base image " + baseImage + " is not on the Docker engine and"
                        + " could not be pulled: " + failed.get());
            }
            try {
                inspected = client.inspectImageCmd(baseImage).exec();
            } catch (RuntimeException again) {
                throw new ImageBuildException(
                        "the base image " + baseImage + " could not be read after pulling: "
                                + DockerEngine.engineMessage(again),
                        again);
            }
        } catch (RuntimeException e) {
            throw new ImageBuildException(
                    "the base image " + baseImage + " could not be read: " + DockerEngine.engineMessage(e), e);
        }
        List<String> triggers =
                inspected.getConfig() == null || inspected.getConfig().getOnBuild() == null
                        ? List.of()
                        : List.of(inspected.getConfig().getOnBuild());
        Optional<String> refused = DockerfilePolicy.triggerRefusal(baseImage, triggers);
        if (refused.isPresent()) {
            throw new ImageBuildException(refused.get() + " (choose a base image without such triggers)");
        }
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static String json(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void tag(String imageRef, String tag) throws ImageBuildException {
        int slash = tag.lastIndexOf('/');
        int colon = tag.lastIndexOf(':');
        String repository = colon > slash ? tag.substring(0, colon) : tag;
        String name = colon > slash ? tag.substring(colon + 1) : "latest";
        try {
            client.tagImageCmd(imageRef, repository, name).withForce(true).exec();
        } catch (RuntimeException e) {
            throw new ImageBuildException(
                    "tagging the image as " + tag + " failed: " + DockerEngine.engineMessage(e), e);
        }
    }

    @Override
    public java.util.List<String> names(String imageRef) {
        try {
            java.util.List<String> tags =
                    client.inspectImageCmd(imageRef).exec().getRepoTags();
            return tags == null ? java.util.List.of() : java.util.List.copyOf(tags);
        } catch (NotFoundException e) {
            return java.util.List.of();
        }
    }

    @Override
    public boolean exists(String imageRef) {
        try {
            client.inspectImageCmd(imageRef).exec();
            return true;
        } catch (NotFoundException e) {
            return false;
        }
    }

    /**
     * The engine's build output: split into lines for the log, following "Step N/M" to know which spec step runs,
     * and keeping the last lines a failing step printed.
     */
    private static final class Output extends ResultCallback.Adapter<BuildResponseItem> {
        private final List<String> instructions;
        private final BuildLog log;
        /** Bounded: a step printing without a line break made the server hold all of it. */
        private final OutputLines lines = new OutputLines(OutputLines.MAX_CHARS, this::line);

        private final Deque<String> tail = new ArrayDeque<>();
        private int step; // 1-based instruction running; 0 before the first
        /** Whether the running instruction is one of the build's own ({@link BuildShell}), not shown in the log. */
        private boolean own;

        private volatile String error;
        private volatile Throwable failure;
        /** Why the server stopped the build, which the engine's error (a killed step) does not say. */
        private volatile String stopped;

        private int stoppedStep;

        Output(List<String> instructions, BuildLog log) {
            this.instructions = instructions;
            this.log = log;
        }

        @Override
        public void onNext(BuildResponseItem item) {
            if (item.getStream() != null) {
                append(item.getStream());
            } else if (item.getStatus() != null && item.getProgressDetail() == null) {
                append(item.getStatus() + "\n"); // pulling a base image
            }
            if (item.isErrorIndicated()) {
                error = item.getErrorDetail() != null && item.getErrorDetail().getMessage() != null
                        ? item.getErrorDetail().getMessage()
                        : item.getError();
            }
        }

        @Override
        public void onError(Throwable throwable) {
            failure = throwable;
            if (error == null) {
                error = DockerEngine.engineMessage(throwable);
            }
            super.onError(throwable);
        }

        private synchronized void append(String text) {
            lines.accept(text.replace("\r", "")); // the engine's carriage returns redraw a line, they do not end it
        }

        synchronized void flush() {
            lines.finish();
        }

        /** Records that the server stopped the build, and why; the log says so once. */
        synchronized void stop(String why) {
            if (stopped == null) {
                stopped = why;
                stoppedStep = step;
                log.line(why);
            }
        }

        private void line(String raw) {
            String line = SGR.matcher(raw).replaceAll("");
            if (PLUMBING.matcher(line).matches()) {
                return;
            }
            Matcher m = STEP.matcher(line);
            if (m.find()) {
                step = Integer.parseInt(m.group(1));
                tail.clear();
                own = isOwn(step);
                if (!own) {
                    // numbered as the user's instructions alone, as if the build's own were not there
                    int ownBefore = (int) java.util.stream.IntStream.range(1, step)
                            .filter(this::isOwn)
                            .count();
                    int ownAll = (int) java.util.stream.IntStream.rangeClosed(1, instructions.size())
                            .filter(this::isOwn)
                            .count();
                    log.line("Step " + (step - ownBefore) + "/" + (Integer.parseInt(m.group(2)) - ownAll) + " : "
                            + line.substring(m.end()));
                }
                return;
            }
            if (own) {
                return;
            }
            log.line(line);
            if (line.isBlank() || line.strip().startsWith("---> ")) {
                return;
            }
            tail.addLast(line);
            while (tail.size() > TAIL_LINES) {
                tail.removeFirst();
            }
        }

        private boolean isOwn(int instruction) {
            return instruction >= 1
                    && instruction <= instructions.size()
                    && instructions.get(instruction - 1).equals(BuildShell.FIELD);
        }

        /** What failed, as the build's error: the spec step, the engine's reason, the step's last output. */
        synchronized String failure() {
            int at = stopped != null ? stoppedStep : step;
            String where = at >= 1 && at <= instructions.size() ? instructions.get(at - 1) : "the build";
            // the engine names the step's command as it ran it, through the build's shell: shown as the user wrote it
            String said = stopped != null
                    ? stopped
                    : error.strip().replace("'" + String.join(" ", BuildShell.SHELL) + " ", "'/bin/sh -c ");
            StringBuilder message = new StringBuilder(where).append(" failed: ").append(said);
            List<String> output = tail.stream()
                    .filter(l -> error == null || !l.strip().equals(error.strip()))
                    .toList();
            if (!output.isEmpty()) {
                message.append("\nLast output:\n").append(String.join("\n", output));
            }
            return message.toString();
        }
    }
}
