package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.image.BuildLog;
import ai.chalk.compute.server.image.ImageBuildException;
import ai.chalk.compute.server.image.ImageBuilder;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.BuildResponseItem;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Builds image specs with the Docker Engine's build API (the classic builder, which every engine has): the
 * {@link DockerBuildContext} is sent as a tar, the image is tagged {@value #REPOSITORY}{@code :<first 32 hex of the
 * content hash>} and labelled {@value #LABEL_CONTENT_HASH} with the whole hash. The engine's output goes to the build
 * log line by line as it comes (without the builder's container and layer ids); a failing instruction is reported with the spec step it came from and its last
 * lines of output.
 */
final class DockerImageBuilder implements ImageBuilder {

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
    /** Instruction flags that only BuildKit understands; the classic builder would refuse them mid-build. */
    private static final Pattern BUILDKIT_FLAGS = Pattern.compile("(?i)^(RUN|COPY|ADD)\\s+.*--(mount|chmod|link|network|security)\\b");

    private final DockerClient client;

    DockerImageBuilder(DockerClient client) {
        this.client = client;
    }

    @Override
    public void check(ImageSpec spec) {
        for (int i = 0; i < spec.getStepsCount(); i++) {
            BuildStep step = spec.getSteps(i);
            if (step.getStepCase() != BuildStep.StepCase.DOCKERFILE_COMMANDS) {
                continue;
            }
            List<String> lines = step.getDockerfileCommands().getCommandsList();
            for (int j = 0; j < lines.size(); j++) {
                Matcher m = BUILDKIT_FLAGS.matcher(lines.get(j).strip());
                if (m.find()) {
                    throw Status.FAILED_PRECONDITION.withDescription("image_spec.steps[" + i
                            + "].dockerfile_commands[" + j + "] uses --" + m.group(2).toLowerCase(Locale.ROOT)
                            + ", which only BuildKit understands; the docker runtime builds with the Engine's classic"
                            + " builder: write the step without it (add_file takes a mode)").asRuntimeException();
                }
            }
        }
    }

    @Override
    public String build(ImageSpec spec, String contentHash, BuildLog log)
            throws ImageBuildException, InterruptedException {
        DockerBuildContext context = DockerBuildContext.of(spec);
        String ref = REPOSITORY + ":" + contentHash.substring(0, 32);
        Output output = new Output(context.instructions(), log);
        try {
            client.buildImageCmd()
                    .withTarInputStream(new ByteArrayInputStream(context.tar()))
                    .withTags(Set.of(ref))
                    .withLabels(Map.of(LABEL_CONTENT_HASH, contentHash))
                    .withPull(false)
                    .withRemove(true)
                    .withForcerm(true)
                    .exec(output);
            output.awaitCompletion();
        } catch (InterruptedException e) {
            closeQuietly(output); // the engine stops the build when its client goes
            throw e;
        } catch (RuntimeException e) {
            throw new ImageBuildException("the Docker engine refused the build: " + DockerRuntime.engineMessage(e), e);
        }
        output.flush();
        if (output.error != null) {
            throw new ImageBuildException(output.failure());
        }
        if (!exists(ref)) {
            throw new ImageBuildException("the Docker engine ended the build without an image"
                    + (output.failure != null ? ": " + DockerRuntime.engineMessage(output.failure) : ""));
        }
        return ref;
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
            throw new ImageBuildException("tagging the image as " + tag + " failed: "
                    + DockerRuntime.engineMessage(e), e);
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

    private static void closeQuietly(ResultCallback.Adapter<?> callback) {
        try {
            callback.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    /**
     * The engine's build output: split into lines for the log, following "Step N/M" to know which spec step runs,
     * and keeping the last lines a failing step printed.
     */
    private static final class Output extends ResultCallback.Adapter<BuildResponseItem> {
        private final List<String> instructions;
        private final BuildLog log;
        private final StringBuilder partial = new StringBuilder();
        private final Deque<String> tail = new ArrayDeque<>();
        private int step; // 1-based instruction running; 0 before the first
        private volatile String error;
        private volatile Throwable failure;

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
                        ? item.getErrorDetail().getMessage() : item.getError();
            }
        }

        @Override
        public void onError(Throwable throwable) {
            failure = throwable;
            if (error == null) {
                error = DockerRuntime.engineMessage(throwable);
            }
            super.onError(throwable);
        }

        private synchronized void append(String text) {
            partial.append(text);
            int nl;
            while ((nl = partial.indexOf("\n")) >= 0) {
                String line = partial.substring(0, nl).replace("\r", "");
                partial.delete(0, nl + 1);
                line(line);
            }
        }

        synchronized void flush() {
            if (partial.length() > 0) {
                line(partial.toString());
                partial.setLength(0);
            }
        }

        private void line(String raw) {
            String line = SGR.matcher(raw).replaceAll("");
            if (PLUMBING.matcher(line).matches()) {
                return;
            }
            log.line(line);
            Matcher m = STEP.matcher(line);
            if (m.find()) {
                step = Integer.parseInt(m.group(1));
                tail.clear();
                return;
            }
            if (line.isBlank() || line.strip().startsWith("---> ")) {
                return;
            }
            tail.addLast(line);
            while (tail.size() > TAIL_LINES) {
                tail.removeFirst();
            }
        }

        /** What failed, as the build's error: the spec step, the engine's reason, the step's last output. */
        synchronized String failure() {
            String where = step >= 1 && step <= instructions.size() ? instructions.get(step - 1) : "the build";
            StringBuilder message = new StringBuilder(where).append(" failed: ").append(error.strip());
            List<String> output = tail.stream().filter(l -> !l.strip().equals(error.strip())).toList();
            if (!output.isEmpty()) {
                message.append("\nLast output:\n").append(String.join("\n", output));
            }
            return message.toString();
        }
    }
}
