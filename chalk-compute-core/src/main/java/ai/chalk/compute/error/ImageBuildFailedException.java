package ai.chalk.compute.error;

/**
 * The image a sandbox was to be created from could not be built. The {@linkplain #buildId() build id} finds its
 * logs ({@code client.images().logs(buildId)}); {@link #output()} is the server's explanation: the failing step and
 * its last lines of output.
 *
 * <p>Reported for a build whose status is {@code failed}; its status code is {@code FAILED_PRECONDITION}.
 */
public class ImageBuildFailedException extends FailedPreconditionException {

    private static final long serialVersionUID = 1L;

    private final String buildId;
    private final String output;

    /**
     * Creates the exception for a failed build.
     *
     * @param buildId the build
     * @param output  the server's explanation: the failing step, why, and its last output lines
     */
    public ImageBuildFailedException(String buildId, String output) {
        super("image build " + buildId + " failed: " + output);
        this.buildId = buildId;
        this.output = output;
    }

    /** The failed build's id. */
    public String buildId() {
        return buildId;
    }

    /** The failing step, why it failed, and its last lines of output, as the server reported them. */
    public String output() {
        return output;
    }
}
