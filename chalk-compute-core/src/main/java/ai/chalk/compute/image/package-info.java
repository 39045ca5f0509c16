/**
 * Declarative container images: an immutable {@link ai.chalk.compute.image.Image} built step by step in Java
 * and sent to the server as Chalk's {@code ImageSpec}, identified by a stable content hash.
 */
package ai.chalk.compute.image;
