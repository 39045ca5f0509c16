package ai.chalk.compute.function;

/** What a registered function is for. */
public enum FunctionKind {
    /** A function called by name, declared with {@link ChalkFunction}. */
    FUNCTION,
    /** An evaluation scorer, declared with {@link ChalkScorer}. */
    SCORER
}
