/**
 * Declarative images: the CustomImageService, its content-addressed build cache and build logs, and the
 * {@link ai.chalk.compute.server.image.ImageBuilder} seam each runtime builds images through.
 */
@NullMarked
package ai.chalk.compute.server.image;

import org.jspecify.annotations.NullMarked;
