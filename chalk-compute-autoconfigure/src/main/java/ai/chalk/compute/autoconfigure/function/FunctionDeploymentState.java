package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.function.FunctionKind;
import java.util.Objects;

/**
 * What the application knows of one of its functions: as shown by the {@code chalkFunctions} health
 * contributor and the {@code chalkfunctions} endpoint.
 *
 * @param name       the registered name callers use, such as {@code score} or {@code Embedder.embed}
 * @param kind       a plain function or a scorer
 * @param beanName   the bean whose method it is
 * @param location   where the method is written, as a stack frame reads: {@code com.acme.Fns.score(Fns.java:12)}
 * @param status     where it stands
 * @param version    the version deployed (1, 2, ...), or {@code null} until deployed
 * @param error      why it failed, or {@code null}
 */
public record FunctionDeploymentState(
        String name,
        FunctionKind kind,
        String beanName,
        String location,
        Status status,
        Integer version,
        String error) {

    /** Checks for nulls; a failed function must say why. */
    public FunctionDeploymentState {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(beanName, "beanName");
        Objects.requireNonNull(location, "location");
        Objects.requireNonNull(status, "status");
        if (status == Status.FAILED) {
            Objects.requireNonNull(error, "error");
        }
    }

    /**
     * The same function in another status.
     *
     * @param newStatus  the status
     * @param newVersion the version, or {@code null}
     * @param newError   why it failed, or {@code null}
     * @return the new state
     */
    public FunctionDeploymentState with(Status newStatus, Integer newVersion, String newError) {
        return new FunctionDeploymentState(name, kind, beanName, location, newStatus, newVersion, newError);
    }

    /** Where a function stands. */
    public enum Status {
        /** Registered: its signature is checked and its Arrow schemas are built; not deployed (yet, or at all). */
        DISCOVERED,
        /** Its deployment is under way in the background. */
        DEPLOYING,
        /**
         * The server holds its version (created, or the same one found unchanged) and routes its calls to it;
         * replicas start as its scaling settings say.
         */
        DEPLOYED,
        /** It cannot be deployed; {@link #error()} says why. */
        FAILED
    }
}
