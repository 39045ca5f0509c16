/**
 * Declarative container images: an immutable {@link ai.chalk.compute.image.Image} sent to the server as Chalk's
 * {@code ImageSpec} and identified by a stable content hash, and {@link ai.chalk.compute.image.Images}, its builds.
 */
@NullMarked
package ai.chalk.compute.image;

import org.jspecify.annotations.NullMarked;
