/**
 * Functions in a Spring application: discovery of {@code @ChalkFunction}, {@code @ChalkScorer} and {@code @ChalkClass}
 * beans, their background deployment (and deploy-only runs), and the worker mode that serves them in a replica.
 */
@NullMarked
package ai.chalk.compute.autoconfigure.function;

import org.jspecify.annotations.NullMarked;
