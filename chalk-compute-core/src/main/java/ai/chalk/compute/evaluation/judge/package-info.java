/**
 * LLM judges: a record graded by a model through an OpenAI-compatible endpoint with structured outputs and checked
 * against that record ({@link ai.chalk.compute.evaluation.judge.LlmJudge}), and the escalating JEV cascade
 * ({@link ai.chalk.compute.evaluation.judge.JevJudge}); either deploys as a scorer function whose replicas run it
 * ({@link ai.chalk.compute.evaluation.judge.JudgeFunction}).
 */
@NullMarked
package ai.chalk.compute.evaluation.judge;

import org.jspecify.annotations.NullMarked;
