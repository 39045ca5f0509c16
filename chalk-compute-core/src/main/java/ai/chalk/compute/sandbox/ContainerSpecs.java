package ai.chalk.compute.sandbox;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.ChalkWorkloadIdentity;
import ai.chalk.compute.proto.container.v1.ResourceLimits;
import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.proto.container.v1.VolumeMount;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import java.util.List;

/** A v1 create request said again as sandbox v2's spec, the only one with room for secret references and identity. */
final class ContainerSpecs {

    private ContainerSpecs() {}

    /**
     * The spec of {@code request}, running {@code image}, with {@code refs} resolved by the server as it starts and a
     * workload identity when {@code identity}.
     */
    static ChalkContainerSpec of(CreateSandboxRequest request, String image, List<SecretRef> refs, boolean identity) {
        ChalkContainerSpec.Builder spec = ChalkContainerSpec.newBuilder()
                .setImage(image)
                .addAllEntrypoint(request.getEntrypointList())
                .putAllEnvVars(request.getEnvMap())
                .addAllSecretRefs(refs);
        if (identity) {
            spec.setChalkWorkloadIdentity(ChalkWorkloadIdentity.getDefaultInstance());
        }
        if (request.hasName()) {
            spec.setName(request.getName());
        }
        if (request.hasResourceLimits()) {
            ResourceLimits.Builder limits = ResourceLimits.newBuilder();
            if (request.getResourceLimits().hasCpu()) {
                limits.setCpu(request.getResourceLimits().getCpu());
            }
            if (request.getResourceLimits().hasMemory()) {
                limits.setMemory(request.getResourceLimits().getMemory());
            }
            spec.setResources(limits);
        }
        request.getVolumesList()
                .forEach(v -> spec.addVolumes(
                        VolumeMount.newBuilder().setName(v.getName()).setMountPath(v.getMountPath())));
        return spec.build();
    }
}
