package ai.chalk.compute.error;

/**
 * The kinds of thing on a Chalk Compute server that a call can name. A client passes the kind it is asking about to
 * {@link ServerCall}, so that a {@code NOT_FOUND} answer is reported as that kind's {@link NotFoundException}.
 */
public enum ResourceKind {

    /** A sandbox: a {@code NOT_FOUND} is a {@link SandboxNotFoundException}. */
    SANDBOX,
    /**
     * A volume, or a file in one; also what creating a sandbox can miss, since the volumes it mounts are the only
     * things a create names that must already exist: a {@code NOT_FOUND} is a {@link VolumeNotFoundException}.
     */
    VOLUME,
    /** An image build: a {@code NOT_FOUND} is an {@link ImageBuildNotFoundException}. */
    IMAGE_BUILD,
    /** A deployed function or one of its versions: a {@code NOT_FOUND} is a {@link FunctionNotFoundException}. */
    FUNCTION,
    /** A queued function call: a {@code NOT_FOUND} is a {@link FunctionCallNotFoundException}. */
    FUNCTION_CALL,
    /** A scaling group or one of its revisions: a {@code NOT_FOUND} is a {@link ScalingGroupNotFoundException}. */
    SCALING_GROUP,
    /** A managed secret of the environment: a {@code NOT_FOUND} is a {@link SecretNotFoundException}. */
    SECRET,
    /** A snapshot of a sandbox: a {@code NOT_FOUND} is a {@link SnapshotNotFoundException}. */
    SNAPSHOT,
    /** A SQL query (a job): a {@code NOT_FOUND} is a {@link SqlQueryNotFoundException}. */
    SQL_QUERY,
    /** A dataset or one of its revisions: a {@code NOT_FOUND} is a {@link DatasetNotFoundException}. */
    DATASET,
    /** An evaluation, one of its runs or a suite: a {@code NOT_FOUND} is an {@link EvaluationNotFoundException}. */
    EVALUATION;

    /** The exception saying that a thing of this kind is missing. */
    NotFoundException notFound(String serverMessage, Throwable cause) {
        return switch (this) {
            case SANDBOX -> new SandboxNotFoundException(serverMessage, cause);
            case VOLUME -> new VolumeNotFoundException(serverMessage, cause);
            case IMAGE_BUILD -> new ImageBuildNotFoundException(serverMessage, cause);
            case FUNCTION -> new FunctionNotFoundException(serverMessage, cause);
            case FUNCTION_CALL -> new FunctionCallNotFoundException(serverMessage, cause);
            case SCALING_GROUP -> new ScalingGroupNotFoundException(serverMessage, cause);
            case SECRET -> new SecretNotFoundException(serverMessage, cause);
            case SNAPSHOT -> new SnapshotNotFoundException(serverMessage, cause);
            case SQL_QUERY -> new SqlQueryNotFoundException(serverMessage, cause);
            case DATASET -> new DatasetNotFoundException(serverMessage, cause);
            case EVALUATION -> new EvaluationNotFoundException(serverMessage, cause);
        };
    }
}
