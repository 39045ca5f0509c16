package ai.chalk.compute.image;

import java.util.Optional;

/**
 * A build of an {@link Image} on the server.
 *
 * @param buildId  the build's id, for {@link Images#get(String)} and {@link Images#logs(String)}
 * @param status   where the build is
 * @param imageRef the built image's reference on the server once it is {@linkplain ImageBuildStatus#ready() ready},
 *                 else empty
 * @param error    why the build failed, naming the step and repeating its last output lines
 */
public record ImageBuild(String buildId, ImageBuildStatus status, String imageRef, Optional<String> error) {}
