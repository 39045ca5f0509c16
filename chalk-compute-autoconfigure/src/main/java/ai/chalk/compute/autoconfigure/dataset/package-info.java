/**
 * The application's {@code DatasetClient} bean: datasets over the same channel and credentials as its
 * {@code SandboxClient}.
 */
@NullMarked
package ai.chalk.compute.autoconfigure.dataset;

import org.jspecify.annotations.NullMarked;
