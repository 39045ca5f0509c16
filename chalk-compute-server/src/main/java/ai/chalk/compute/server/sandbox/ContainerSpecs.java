package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.ComputeClass;
import ai.chalk.compute.proto.container.v1.KernelPolicy;
import ai.chalk.compute.proto.container.v1.RestartPolicy;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ResourceLimits;
import ai.chalk.compute.proto.sandbox.v1.VolumeMount;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.store.SandboxRecord;
import com.google.protobuf.InvalidProtocolBufferException;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code chalk.container.v1.ChalkContainerSpec}, the v2 description of a sandbox, next to v1's
 * {@code CreateSandboxRequest}: which of its fields this server honours, and the translation both ways, so that a
 * v2 sandbox goes through exactly the validation of a v1 one and every sandbox shows a spec in v2.
 */
public final class ContainerSpecs {

    private ContainerSpecs() {}

    /** The largest container spec a sandbox or a scaling group's replica may have, serialized. */
    public static final int MAX_SPEC_BYTES = 512 << 10;

    /**
     * Refuses a spec past {@link #MAX_SPEC_BYTES} (INVALID_ARGUMENT naming {@code field}): it is kept with each
     * sandbox's record, and an environment's 10,000 finished sandboxes are kept.
     */
    public static void checkSize(ChalkContainerSpec spec, String field) {
        int size = spec.getSerializedSize();
        if (size > MAX_SPEC_BYTES) {
            throw ComputeException.invalid(field + " (entrypoint, variables, volumes, policies) is " + size
                    + " bytes; at most " + (MAX_SPEC_BYTES >> 10) + " KiB are allowed (put files in a volume or the"
                    + " image)");
        }
    }

    /**
     * Refuses, with FAILED_PRECONDITION naming each one, the fields of {@code spec} that sandboxes on this runtime
     * cannot honour: a sandbox that silently lacked its secrets, port or probes would fail later and far from the
     * cause. Fields honoured: name, image (as v1: the runtime decides which it can run), entrypoint, tags, lifetime,
     * resources cpu and memory, env_vars, secret_refs, volumes, network_policy, restart_policy NEVER, security_policy
     * kernel_policy OPEN.
     */
    static void refuseUnsupported(ChalkContainerSpec spec, String runtime) {
        List<String> refused = new ArrayList<>();
        if (spec.hasPort()) {
            refused.add("port (the " + runtime + " runtime exposes no sandbox ports; reach services from inside"
                    + " the sandbox with exec)");
        }
        if (spec.hasEnableSsh() && spec.getEnableSsh()) {
            refused.add("enable_ssh (no SSH server is offered; use exec or sessions)");
        }
        if (spec.hasProtocol() && !spec.getProtocol().isBlank()) {
            refused.add("protocol (no ingress for sandbox ports)");
        }
        if (spec.hasRouting() && !spec.getRouting().isBlank()) {
            refused.add("routing (no ingress for sandbox ports)");
        }
        if (spec.hasAuthentication() && !spec.getAuthentication().isBlank()) {
            refused.add("authentication (no ingress for sandbox ports)");
        }
        if (spec.hasSecurityPolicy()
                && spec.getSecurityPolicy().hasKernelPolicy()
                && spec.getSecurityPolicy().getKernelPolicy() != KernelPolicy.KERNEL_POLICY_UNSPECIFIED
                && spec.getSecurityPolicy().getKernelPolicy() != KernelPolicy.KERNEL_POLICY_OPEN) {
            refused.add("security_policy.kernel_policy ("
                    + spec.getSecurityPolicy().getKernelPolicy()
                    + ": " + runtime + " sandboxes run on the host's kernel, in namespaces without capabilities;"
                    + " only KERNEL_POLICY_OPEN describes them)");
        }
        if (spec.hasComputeClass() && spec.getComputeClass() != ComputeClass.COMPUTE_CLASS_UNSPECIFIED) {
            refused.add("compute_class (" + spec.getComputeClass() + ": the " + runtime
                    + " runtime runs every sandbox on the server's own host; leave it unset)");
        }
        if (spec.hasStartupProbe()) {
            refused.add("startup_probe (sandboxes are not probed: no port is exposed)");
        }
        if (spec.hasReadinessProbe()) {
            refused.add("readiness_probe (sandboxes are not probed: no port is exposed)");
        }
        if (spec.hasRestartPolicy() && spec.getRestartPolicy() == RestartPolicy.RESTART_POLICY_ALWAYS) {
            refused.add("restart_policy (RESTART_POLICY_ALWAYS: " + runtime + " sandboxes are never restarted;"
                    + " use RESTART_POLICY_NEVER or leave it unset)");
        }
        if (spec.getManagedSshCount() > 0) {
            refused.add("managed_ssh (no managed SSH destinations; clone over HTTPS, or pass keys in env_vars)");
        }
        if (spec.hasResources()
                && spec.getResources().hasGpu()
                && !spec.getResources().getGpu().isBlank()) {
            refused.add("resources.gpu (the " + runtime + " runtime has no GPUs to give sandboxes)");
        }
        if (!refused.isEmpty()) {
            throw ComputeException.refused("the sandbox was not created: this server's " + runtime
                    + " runtime cannot honour "
                    + (refused.size() == 1
                            ? "this ChalkContainerSpec field, and refuses it rather than ignore it: "
                            : "these ChalkContainerSpec fields, and refuses them rather than ignore them: ")
                    + String.join("; ", refused));
        }
    }

    /**
     * The cpu and memory limits of a spec, checked ({@code INVALID_ARGUMENT} naming the field when malformed).
     *
     * @param spec  the spec
     * @param field how the spec is named in messages, such as {@code spec.container_spec}
     * @return the limits, {@link SandboxSpec.ResourceLimits#NONE} when it sets none
     */
    public static SandboxSpec.ResourceLimits limits(ChalkContainerSpec spec, String field) {
        if (!spec.hasResources()) {
            return SandboxSpec.ResourceLimits.NONE;
        }
        var r = spec.getResources();
        return ResourceQuantity.limits(
                field + ".resources.cpu",
                r.hasCpu(),
                r.getCpu(),
                field + ".resources.memory",
                r.hasMemory(),
                r.getMemory());
    }

    /** The v1 request that creates the same sandbox as {@code spec} (whose other fields were refused already). */
    static CreateSandboxRequest toV1(ChalkContainerSpec spec) {
        CreateSandboxRequest.Builder b = CreateSandboxRequest.newBuilder()
                .addAllEntrypoint(spec.getEntrypointList())
                .putAllEnv(spec.getEnvVarsMap());
        if (!spec.getName().isBlank()) {
            b.setName(spec.getName());
        }
        if (!spec.getImage().isBlank()) {
            b.setImage(spec.getImage());
        }
        if (spec.hasResources()) {
            ResourceLimits.Builder rl = ResourceLimits.newBuilder();
            if (spec.getResources().hasCpu()) {
                rl.setCpu(spec.getResources().getCpu());
            }
            if (spec.getResources().hasMemory()) {
                rl.setMemory(spec.getResources().getMemory());
            }
            b.setResourceLimits(rl);
        }
        for (ai.chalk.compute.proto.container.v1.VolumeMount v : spec.getVolumesList()) {
            VolumeMount.Builder m = VolumeMount.newBuilder()
                    .setName(v.getName())
                    .setMountPath(v.getMountPath())
                    .setType(v.getType());
            if (v.hasSizeLimit()) {
                m.setSizeLimit(v.getSizeLimit());
            }
            if (v.hasVersionId()) {
                m.setVersionId(v.getVersionId());
            }
            if (v.hasRefName()) {
                m.setRefName(v.getRefName());
            }
            b.addVolumes(m);
        }
        if (spec.hasNetworkPolicy()) {
            b.setNetworkPolicy(spec.getNetworkPolicy());
        }
        if (spec.hasRestartPolicy()) {
            b.setRestartPolicy(spec.getRestartPolicy());
        }
        return b.build();
    }

    /** The spec v2 shows for a sandbox created through v1. */
    static ChalkContainerSpec fromV1(CreateSandboxRequest request) {
        ChalkContainerSpec.Builder b = ChalkContainerSpec.newBuilder()
                .setName(request.hasName() ? request.getName() : "")
                .setImage(
                        request.getImageSourceCase() == CreateSandboxRequest.ImageSourceCase.IMAGE
                                ? request.getImage().trim()
                                : "")
                .addAllEntrypoint(request.getEntrypointList())
                .putAllEnvVars(request.getEnvMap());
        if (request.hasResourceLimits()) {
            ai.chalk.compute.proto.container.v1.ResourceLimits.Builder rl =
                    ai.chalk.compute.proto.container.v1.ResourceLimits.newBuilder();
            if (request.getResourceLimits().hasCpu()) {
                rl.setCpu(request.getResourceLimits().getCpu());
            }
            if (request.getResourceLimits().hasMemory()) {
                rl.setMemory(request.getResourceLimits().getMemory());
            }
            b.setResources(rl);
        }
        for (VolumeMount v : request.getVolumesList()) {
            ai.chalk.compute.proto.container.v1.VolumeMount.Builder m =
                    ai.chalk.compute.proto.container.v1.VolumeMount.newBuilder()
                            .setName(v.getName())
                            .setMountPath(v.getMountPath())
                            .setType(v.getType());
            if (v.hasSizeLimit()) {
                m.setSizeLimit(v.getSizeLimit());
            }
            if (v.hasVersionId()) {
                m.setVersionId(v.getVersionId());
            }
            if (v.hasRefName()) {
                m.setRefName(v.getRefName());
            }
            b.addVolumes(m);
        }
        if (request.hasNetworkPolicy()) {
            b.setNetworkPolicy(request.getNetworkPolicy());
        }
        if (request.hasRestartPolicy()) {
            b.setRestartPolicy(request.getRestartPolicy());
        }
        return b.build();
    }

    /** The spec of a recorded sandbox: as recorded, or rebuilt from its v1 request for older records. */
    public static ChalkContainerSpec of(SandboxRecord record) {
        try {
            if (record.containerSpec() != null) {
                return ChalkContainerSpec.parseFrom(record.containerSpec());
            }
            if (record.request() != null) {
                return fromV1(CreateSandboxRequest.parseFrom(record.request()));
            }
        } catch (InvalidProtocolBufferException e) {
            // an unreadable record shows what is known for sure
        }
        return ChalkContainerSpec.newBuilder()
                .setName(record.name().orElse(""))
                .setImage(record.image())
                .build();
    }
}
