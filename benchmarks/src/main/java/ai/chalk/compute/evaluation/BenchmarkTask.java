package ai.chalk.compute.evaluation;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.ChalkScorer;

/**
 * The task and function scorer {@link EvaluationBenchmark} deploys: trivial on purpose, so the figures measure the
 * evaluation's machinery (reading, batching, scoring, writing the result), not the work of a row.
 */
public class BenchmarkTask {

    /** The task: twice {@code x}. */
    @ChalkFunction(description = "Twice x")
    public static long twice(long x) {
        return 2 * x;
    }

    @ChalkScorer(description = "1 when the output is within one of the expected value, else 0")
    public static EvaluationScorerResult withinOne(long expected, long output) {
        return EvaluationScorerResult.of(Math.abs(expected - output) <= 1 ? 1 : 0);
    }
}
