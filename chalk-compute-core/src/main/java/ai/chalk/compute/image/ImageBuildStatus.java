package ai.chalk.compute.image;

import java.util.Locale;

/** Where an image build is, as the server reports it. */
public enum ImageBuildStatus {
    /** The image was built earlier and is still there: nothing was built for this request. */
    EXISTS,
    /** The build is running. */
    BUILDING,
    /** The build finished and the image is ready. */
    SUCCEEDED,
    /** The build failed; its error names the step and why. */
    FAILED,
    /** A status this client does not know (a newer server). */
    UNKNOWN;

    /**
     * The status a server reported, such as {@code "building"}.
     *
     * @param wire the server's status text
     * @return the status, {@link #UNKNOWN} for one this client does not know
     */
    public static ImageBuildStatus fromWire(String wire) {
        try {
            return valueOf(wire.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            return UNKNOWN;
        }
    }

    /** Whether the image can be used: {@link #EXISTS} or {@link #SUCCEEDED}. */
    public boolean ready() {
        return this == EXISTS || this == SUCCEEDED;
    }
}
