package ai.chalk.compute.function;

/** What a function parameter is bound to when the function runs over a dataset, as in an evaluation. */
public enum ParameterRole {
    /** The column of the same name: a dataset column in an evaluation, an argument in a direct call. */
    COLUMN,
    /** A scorer's {@code output} parameter: what the evaluated task returned for the row. */
    OUTPUT,
    /** A scorer's {@code trace} parameter: the trace of the evaluated task's run for the row. */
    TRACE
}
