package ai.chalk.compute.server.image;

import ai.chalk.compute.server.store.ImageBuildStore;
import java.util.Optional;

/**
 * What the build cache answers a request for an image: the build that serves it and its status as Chalk's
 * CustomImageService names it.
 *
 * @param buildId  the build
 * @param status   {@value #EXISTS} (built earlier and still present: nothing was built), {@value #BUILDING},
 *                 {@value #SUCCEEDED} or {@value #FAILED}
 * @param imageRef the image, once built; empty while building or after a failure
 * @param error    why the build failed, naming the step
 */
public record BuildAnswer(String buildId, String status, String imageRef, Optional<String> error) {

    public static final String EXISTS = "exists";
    public static final String BUILDING = "building";
    public static final String SUCCEEDED = "succeeded";
    public static final String FAILED = "failed";

    /** The answer for a recorded build, in its current status. */
    static BuildAnswer of(ImageBuildStore.BuildRecord record) {
        return new BuildAnswer(
                record.id(), status(record.status()), record.imageRef().orElse(""), record.error());
    }

    /** The wire name of a build's status. */
    public static String status(ImageBuildStore.Status status) {
        return switch (status) {
            case BUILDING -> BUILDING;
            case SUCCEEDED -> SUCCEEDED;
            case FAILED -> FAILED;
        };
    }
}
