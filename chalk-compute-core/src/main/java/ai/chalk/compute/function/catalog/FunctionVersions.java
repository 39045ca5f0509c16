package ai.chalk.compute.function.catalog;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunction;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionTraffic;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionTrafficTarget;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.UpdateExternalFunctionRequest;
import io.grpc.Channel;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * The versions of deployed functions, over a channel to the server: the current one, all of them, a rollback, and
 * deleting a function. {@code FunctionDeployer} and {@code RemoteFunction} both manage versions through it.
 */
public final class FunctionVersions {

    private final ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog;

    /**
     * The versions the server behind a channel keeps.
     *
     * @param channel the channel to the server
     */
    public FunctionVersions(Channel channel) {
        this.catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(Objects.requireNonNull(channel, "channel"));
    }

    /**
     * A function's current version.
     *
     * @param functionName the function's name
     * @return its current version
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     */
    public FunctionVersion current(String functionName) {
        ExternalFunctionVersion current = function(functionName).getCurrentVersion();
        return FunctionVersion.of(current, current.getId());
    }

    /**
     * Every version of a function, oldest first, with the current one marked.
     *
     * @param functionName the function's name
     * @return its versions
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     * @throws ChalkComputeException                            when the server cannot be reached
     */
    public List<FunctionVersion> versions(String functionName) {
        ExternalFunction function = function(functionName);
        String current = function.getCurrentVersion().getId();
        List<FunctionVersion> versions = new ArrayList<>();
        String cursor = null;
        do {
            var request = ListExternalFunctionVersionsRequest.newBuilder().setFunctionId(function.getId());
            if (cursor != null) {
                request.setCursor(cursor);
            }
            ListExternalFunctionVersionsResponse page =
                    ServerCall.run(ResourceKind.FUNCTION, () -> catalog.listExternalFunctionVersions(request.build()));
            page.getEntriesList()
                    .forEach(e -> versions.add(FunctionVersion.of(e.getExternalFunctionVersion(), current)));
            cursor = page.hasNextCursor() && !page.getNextCursor().isEmpty() ? page.getNextCursor() : null;
        } while (cursor != null);
        versions.sort(Comparator.comparingInt(FunctionVersion::version));
        return versions;
    }

    /**
     * Makes a version current again: all of the function's traffic goes to it.
     *
     * @param functionId the function's stable id
     * @param versionId  the version's id
     * @throws ai.chalk.compute.error.FunctionNotFoundException when either is unknown
     */
    public void rollback(String functionId, String versionId) {
        ServerCall.run(
                ResourceKind.FUNCTION,
                () -> catalog.updateExternalFunction(UpdateExternalFunctionRequest.newBuilder()
                        .setExternalFunctionId(functionId)
                        .setTraffic(ExternalFunctionTraffic.newBuilder()
                                .addTargets(ExternalFunctionTrafficTarget.newBuilder()
                                        .setExternalFunctionVersionId(versionId)
                                        .setPercent(100)))
                        .build()));
    }

    /**
     * Deletes a function and all its versions.
     *
     * @param functionName the function's name
     * @throws ai.chalk.compute.error.FunctionNotFoundException when it is unknown
     */
    public void delete(String functionName) {
        ServerCall.run(
                ResourceKind.FUNCTION,
                () -> catalog.deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                        .setFunctionName(functionName)
                        .build()));
    }

    private ExternalFunction function(String name) {
        return ServerCall.run(
                ResourceKind.FUNCTION,
                () -> catalog.getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                .setFunctionName(name)
                                .build())
                        .getExternalFunction());
    }
}
