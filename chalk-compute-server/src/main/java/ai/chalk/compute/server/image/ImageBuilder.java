package ai.chalk.compute.server.image;

import ai.chalk.compute.proto.sandbox.v1.ImageSpec;

/**
 * Builds the image an {@link ImageSpec} describes, for one runtime: the docker runtime through the Engine's
 * build API, the local runtime as cached root-filesystem layers. The result is an image reference that the same
 * runtime's sandboxes can be created from (a sandbox spec's {@code image}).
 * Implementations are thread-safe; the build cache above them makes sure one spec is built once at a time.
 */
public interface ImageBuilder {

    /**
     * Refuses, before anything is recorded or built, a spec this runtime cannot build: throws a
     * {@link ai.chalk.compute.server.error.ComputeException} ({@code REFUSED}, or {@code INVALID} for a malformed
     * field) naming the step (its index and kind) and the runtime that can build it.
     */
    void check(ImageSpec spec);

    /**
     * Builds the image and returns its reference. Output of the build (each step's commands and their
     * stdout/stderr) goes to {@code log} line by line as it happens.
     *
     * @param contentHash the spec's content hash (hex SHA-256 of its deterministic serialisation), usable in tags
     *                    and cache keys
     * @throws ImageBuildException when a step fails; its message names the step and says why
     * @throws InterruptedException when the build was cancelled (the server is stopping)
     */
    String build(ImageSpec spec, String contentHash, BuildLog log) throws ImageBuildException, InterruptedException;

    /**
     * Gives an image this builder returned another name ({@code repository[:tag]}), for BuildCustomImage's
     * {@code tag}. Runtimes whose images have no names outside the server refuse.
     *
     * @throws ImageBuildException when the image cannot be tagged; the message says why
     */
    default void tag(String imageRef, String tag) throws ImageBuildException {
        throw new ImageBuildException("cannot tag the image as \"" + tag + "\": images of this runtime have no"
                + " names outside this server; use the docker runtime for tagged images");
    }

    /** Whether an image this builder returned earlier is still present (a cache entry whose image is gone is rebuilt). */
    boolean exists(String imageRef);

    /**
     * Every name ({@code repository:tag}) the runtime knows the image {@code imageRef} resolves to by, whatever way
     * it is spelt (a registry prefix, an id or a prefix of one); empty when the runtime has no such image, or its
     * images have no names outside this server.
     */
    default java.util.List<String> names(String imageRef) {
        return java.util.List.of();
    }
}
