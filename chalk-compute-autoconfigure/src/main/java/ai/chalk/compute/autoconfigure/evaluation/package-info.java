/**
 * The application's {@code EvaluationClient} bean: evaluations over the same channel as its {@code SandboxClient},
 * with the application's own {@code @ChalkFunction} and {@code @ChalkScorer} methods given by name.
 */
@NullMarked
package ai.chalk.compute.autoconfigure.evaluation;

import org.jspecify.annotations.NullMarked;
