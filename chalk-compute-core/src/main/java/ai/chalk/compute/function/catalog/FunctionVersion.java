package ai.chalk.compute.function.catalog;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import java.time.Instant;
import java.util.Objects;

/**
 * One immutable version of a deployed function.
 *
 * @param id                     the version's id
 * @param functionId             the stable id of its function
 * @param functionName           the function's name
 * @param version                its number: 1, 2, ...
 * @param scalingGroupRevisionId the scaling-group revision whose replicas run it
 * @param createdAt              when it was created
 * @param current                whether it is the function's current version, the one calls go to
 */
public record FunctionVersion(
        String id,
        String functionId,
        String functionName,
        int version,
        String scalingGroupRevisionId,
        Instant createdAt,
        boolean current) {

    /** Checks for nulls. */
    public FunctionVersion {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(functionId, "functionId");
        Objects.requireNonNull(functionName, "functionName");
        Objects.requireNonNull(scalingGroupRevisionId, "scalingGroupRevisionId");
        Objects.requireNonNull(createdAt, "createdAt");
    }

    /**
     * The version described by the catalog.
     *
     * @param version          the catalog's message
     * @param currentVersionId the function's current version's id
     * @return the version
     */
    public static FunctionVersion of(ExternalFunctionVersion version, String currentVersionId) {
        return new FunctionVersion(
                version.getId(),
                version.getFunctionId(),
                version.getFunctionName(),
                version.getVersion(),
                version.getScalingGroupRevisionId(),
                Instant.ofEpochSecond(
                        version.getCreatedAt().getSeconds(),
                        version.getCreatedAt().getNanos()),
                version.getId().equals(currentVersionId));
    }
}
