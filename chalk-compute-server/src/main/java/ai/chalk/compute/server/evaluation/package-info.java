/**
 * Evaluations: suites and evaluations that pin a dataset revision, a task function version and scorers, stored in the
 * server's database, runs executed by the server through the task's replica pool into a result dataset revision and a
 * score summary, and {@code chalk.evaluation.v1.EvaluationService} over them.
 */
@NullMarked
package ai.chalk.compute.server.evaluation;

import org.jspecify.annotations.NullMarked;
