package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunction;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionSummary;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupVisibility;
import ai.chalk.compute.server.store.FunctionStore.FunctionRecord;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import com.google.protobuf.Timestamp;
import java.time.Instant;

/** Functions and versions as the catalog API describes them. */
final class FunctionViews {

    private final FunctionDeployments deployments;

    FunctionViews(FunctionDeployments deployments) {
        this.deployments = deployments;
    }

    ExternalFunctionVersion version(VersionRecord v) {
        CreateExternalFunctionVersionRequest r = FunctionWorkers.request(v);
        FunctionRecord f = deployments.store().function(v.functionId()).orElseThrow();
        ExternalFunctionVersion.Builder b = ExternalFunctionVersion.newBuilder()
                .setId(v.id())
                .setFunctionId(f.id())
                .setFunctionName(f.name())
                .setVersion(v.version())
                .setInputArrowSchema(r.getInputArrowSchema())
                .setOutputArrowSchema(r.getOutputArrowSchema())
                .setScalingGroupName(f.name())
                .setScalingGroupRevisionId(v.revisionId())
                .setCreatedAt(ts(v.createdAt()));
        if (r.hasConfig()) {
            b.setConfig(r.getConfig());
        }
        v.deletedAt().ifPresent(d -> b.setDeletedAt(ts(d)));
        return b.build();
    }

    ExternalFunction function(FunctionRecord f) {
        ExternalFunction.Builder b = ExternalFunction.newBuilder()
                .setId(f.id())
                .setName(f.name())
                .setCreatedAt(ts(f.createdAt()))
                .setUpdatedAt(ts(f.updatedAt()));
        f.currentVersionId().flatMap(deployments.store()::version).ifPresent(v -> b.setCurrentVersion(version(v)));
        f.deletedAt().ifPresent(d -> b.setDeletedAt(ts(d)));
        return b.build();
    }

    ExternalFunctionSummary summary(FunctionRecord f, boolean includeGroup) {
        int latest = deployments.store().highestVersion(f.id());
        ExternalFunctionSummary.Builder b = ExternalFunctionSummary.newBuilder()
                .setName(f.name())
                .setFunctionId(f.id())
                .setLatestVersion(latest)
                .setLatestScalingGroupName(f.name())
                .setLatestUpdatedAt(ts(f.updatedAt()))
                .setCreatedAt(ts(f.createdAt()))
                .setVisibility(
                        f.deletedAt().isPresent()
                                ? ScalingGroupVisibility.SCALING_GROUP_VISIBILITY_ARCHIVED
                                : ScalingGroupVisibility.SCALING_GROUP_VISIBILITY_ACTIVE);
        f.currentVersionId().flatMap(deployments.store()::version).ifPresent(v -> {
            b.setCurrentVersion(v.version());
            CreateExternalFunctionVersionRequest r = FunctionWorkers.request(v);
            if (r.hasConfig()) {
                b.setConfig(r.getConfig());
            }
        });
        if (includeGroup && f.deletedAt().isEmpty()) {
            deployments
                    .groups()
                    .store()
                    .liveGroupNamed(f.environment(), f.name())
                    .ifPresent(g -> b.setScalingGroup(deployments.groups().response(g)));
        }
        return b.build();
    }

    static Timestamp ts(Instant i) {
        return Timestamp.newBuilder()
                .setSeconds(i.getEpochSecond())
                .setNanos(i.getNano())
                .build();
    }
}
