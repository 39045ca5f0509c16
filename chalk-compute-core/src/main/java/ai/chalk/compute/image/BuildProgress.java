package ai.chalk.compute.image;

import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressGroup;
import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesResponse;

/**
 * Shows one image build in the progress display, as the SDK's groups do:
 * <pre>
 * Image build "python:3.12-slim"
 *   │ › Step 2/3 : RUN pip install pandas
 *   │ › Collecting pandas
 *   └ ✓ Built chalk-compute/custom:3f2a...
 * </pre>
 * Each line of build output is a step; the group closes with the image, or with the failure's first line.
 */
final class BuildProgress implements AutoCloseable {

    private final ProgressGroup group;

    BuildProgress(ProgressDisplay display, String baseImage) {
        this.group = display.open("Image build \"" + baseImage + "\"");
    }

    /** Shows an update of the build's stream: a line of output, or its end. */
    void update(StreamCustomImageBuildUpdatesResponse update) {
        if (!update.getMessage().isBlank()) {
            group.step(update.getMessage());
        }
        switch (ImageBuildStatus.fromWire(update.getStatus())) {
            case SUCCEEDED, EXISTS -> group.succeed("Built " + update.getImage());
            case FAILED -> group.fail("Failed: " + firstLine(update.getError()));
            default -> {}
        }
    }

    /** Closes the group as not finished, unless an update already closed it. */
    @Override
    public void close() {
        group.close();
    }

    private static String firstLine(String text) {
        int nl = text.indexOf('\n');
        return nl < 0 ? text : text.substring(0, nl);
    }
}
