/**
 * Evaluations: what a scorer function returns for a row ({@link ai.chalk.compute.evaluation.EvaluationScorerResult}),
 * a score with optional JSON metadata, carried in Arrow as the Python SDK carries it.
 */
@NullMarked
package ai.chalk.compute.evaluation;

import org.jspecify.annotations.NullMarked;
