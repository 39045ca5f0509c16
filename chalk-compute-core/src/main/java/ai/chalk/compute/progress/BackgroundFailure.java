package ai.chalk.compute.progress;

import java.util.Objects;

/**
 * A failure of background work that no caller observed.
 *
 * @param operation what was being done, for example {@code Deploying function "fraud"}
 * @param failure   why it failed
 */
public record BackgroundFailure(String operation, Throwable failure) {

    /** Validates the failure. */
    public BackgroundFailure {
        Objects.requireNonNull(operation, "operation");
        Objects.requireNonNull(failure, "failure");
    }
}
