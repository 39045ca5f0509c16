package ai.chalk.compute.evaluation;

/**
 * Something an evaluation scores its rows with that needs no function body of yours: a built-in
 * ({@link BuiltinScorer}) or an LLM judge ({@link ai.chalk.compute.evaluation.judge.LlmJudge},
 * {@link ai.chalk.compute.evaluation.judge.JevJudge}). Make them with {@link Scorers}.
 */
public interface Scorer {

    /**
     * The scorer's name, which names its score and metadata columns in a run's result dataset.
     *
     * @return the name
     */
    String name();
}
