/**
 * Declarative images: the CustomImageService, its content-addressed build cache and build logs, and the
 * {@link ai.chalk.compute.server.image.ImageBuilder} seam each runtime builds images through.
 */
package ai.chalk.compute.server.image;
