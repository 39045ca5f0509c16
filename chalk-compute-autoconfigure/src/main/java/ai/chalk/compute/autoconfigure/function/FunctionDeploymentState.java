package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.function.FunctionKind;
import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What the application knows of one of its functions: as shown by the {@code chalkFunctions} health
 * contributor and the {@code chalkfunctions} endpoint.
 *
 * @param name       the registered name callers use, such as {@code score} or {@code Embedder.embed}
 * @param kind       a plain function or a scorer
 * @param beanName   the bean whose method it is
 * @param location   where the method is written, as a stack frame reads: {@code com.acme.Fns.score(Fns.java:12)}
 * @param status      where it stands
 * @param version     the version deployed (1, 2, ...), or {@code null} until deployed
 * @param error       why it failed, or why its last try failed while it is {@link Status#RETRYING}; else {@code null}
 * @param attempts    how many times its deployment has been tried in a row (0 before the first try)
 * @param nextAttempt when the next try starts, while it is {@link Status#RETRYING}; else {@code null}
 * @param reused      whether the version deployed is one the server already had (nothing changed), rather than new
 */
public record FunctionDeploymentState(
        String name,
        FunctionKind kind,
        String beanName,
        String location,
        Status status,
        @Nullable Integer version,
        @Nullable String error,
        int attempts,
        @Nullable Instant nextAttempt,
        boolean reused) {

    /** Checks for nulls; a failed or retrying function must say why, and when it tries again. */
    public FunctionDeploymentState {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(beanName, "beanName");
        Objects.requireNonNull(location, "location");
        Objects.requireNonNull(status, "status");
        if (status == Status.FAILED || status == Status.RETRYING) {
            Objects.requireNonNull(error, "error");
        }
        if (status == Status.RETRYING) {
            Objects.requireNonNull(nextAttempt, "nextAttempt");
        }
    }

    /**
     * A function as discovery finds it: not tried yet.
     *
     * @param name     its registered name
     * @param kind     a plain function or a scorer
     * @param beanName the bean whose method it is
     * @param location where the method is written
     * @param status   {@link Status#DISCOVERED}, or {@link Status#FAILED} with an error
     * @param error    why it failed, or {@code null}
     * @return the state
     */
    public static FunctionDeploymentState discovered(
            String name, FunctionKind kind, String beanName, String location, Status status, @Nullable String error) {
        return new FunctionDeploymentState(name, kind, beanName, location, status, null, error, 0, null, false);
    }

    /**
     * The same function in another status, its tries counted as before.
     *
     * @param newStatus  the status
     * @param newVersion the version, or {@code null}
     * @param newError   why it failed, or {@code null}
     * @return the new state
     */
    public FunctionDeploymentState with(Status newStatus, @Nullable Integer newVersion, @Nullable String newError) {
        return new FunctionDeploymentState(
                name, kind, beanName, location, newStatus, newVersion, newError, attempts, null, false);
    }

    /**
     * The same function being tried, for the given time in a row.
     *
     * @param attempt 1 for a first try
     * @return the new state, {@link Status#DEPLOYING}, keeping the last error until this try ends
     */
    public FunctionDeploymentState deploying(int attempt) {
        return new FunctionDeploymentState(
                name, kind, beanName, location, Status.DEPLOYING, version, error, attempt, null, false);
    }

    /**
     * The same function deployed.
     *
     * @param deployedVersion the version serving it
     * @param wasReused       whether the server already had that version
     * @return the new state
     */
    public FunctionDeploymentState deployed(int deployedVersion, boolean wasReused) {
        return new FunctionDeploymentState(
                name, kind, beanName, location, Status.DEPLOYED, deployedVersion, null, attempts, null, wasReused);
    }

    /**
     * The same function waiting to be tried again.
     *
     * @param lastError why the last try failed
     * @param next      when the next try starts
     * @return the new state
     */
    public FunctionDeploymentState retrying(String lastError, Instant next) {
        return new FunctionDeploymentState(
                name, kind, beanName, location, Status.RETRYING, null, lastError, attempts, next, false);
    }

    /** Where a function stands. */
    public enum Status {
        /** Registered: its signature is checked and its Arrow schemas are built; not deployed (yet, or at all). */
        DISCOVERED,
        /** Its deployment is under way in the background. */
        DEPLOYING,
        /**
         * Its last try could not reach the server (it was not up yet, or restarting); it is tried again at
         * {@link #nextAttempt()}, and {@link #error()} says why the last try failed.
         */
        RETRYING,
        /**
         * The server holds its version (created, or the same one found unchanged) and routes its calls to it;
         * replicas start as its scaling settings say.
         */
        DEPLOYED,
        /** It cannot be deployed; {@link #error()} says why. */
        FAILED
    }
}
