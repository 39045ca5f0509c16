package ai.chalk.compute.evaluation;

import java.util.Locale;

/**
 * Who drives an evaluation run, sent as the run's {@code execution_mode} metadata:
 * <pre>{@code
 * evaluation.run(Map.of("git_sha", "abc123"), EvaluationRunExecutionMode.WORKFLOW);
 * }</pre>
 * A server whose environment has no workflow orchestrator (ours has none) refuses {@link #WORKFLOW} with
 * {@code FAILED_PRECONDITION}, which the SDK throws as a
 * {@link ai.chalk.compute.error.FailedPreconditionException} naming the missing orchestrator.
 */
public enum EvaluationRunExecutionMode {
    /** The server executes the run itself (the default; no {@code execution_mode} is sent). */
    SERVER,
    /** A workflow on the environment's workflow orchestrator drives the run; the environment must have one. */
    WORKFLOW;

    /** The metadata key the mode travels under. */
    static final String METADATA_KEY = "execution_mode";

    /** The value sent as {@code execution_mode}: {@code workflow} for {@link #WORKFLOW}. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The mode a run's metadata names: {@link #WORKFLOW} for {@code workflow}, else {@link #SERVER}. */
    static EvaluationRunExecutionMode of(Object value) {
        return value instanceof String s && s.equalsIgnoreCase(WORKFLOW.wireName()) ? WORKFLOW : SERVER;
    }
}
