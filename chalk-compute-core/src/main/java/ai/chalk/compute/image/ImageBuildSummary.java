package ai.chalk.compute.image;

import java.time.Instant;

/**
 * One build as {@link Images#list()} shows it.
 *
 * @param buildId     the build's id
 * @param contentHash the {@link Image#contentHash()} of the image it built
 * @param status      where the build is
 * @param imageRef    the built image, once ready; else empty
 * @param baseImage   the image it built on
 * @param createdAt   when the build was asked for
 */
public record ImageBuildSummary(
        String buildId,
        String contentHash,
        ImageBuildStatus status,
        String imageRef,
        String baseImage,
        Instant createdAt) {}
