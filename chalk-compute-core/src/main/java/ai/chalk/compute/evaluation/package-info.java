/**
 * Evaluations: suites, evaluations that pin a dataset revision to a task and scorers, and their runs with result
 * datasets and score summaries ({@link ai.chalk.compute.evaluation.EvaluationClient}); the built-in scorers and what a
 * scorer function returns for a row ({@link ai.chalk.compute.evaluation.EvaluationScorerResult}).
 */
@NullMarked
package ai.chalk.compute.evaluation;

import org.jspecify.annotations.NullMarked;
