package ai.chalk.compute.server.scalinggroup;

import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.server.sandbox.SandboxManager;
import ai.chalk.compute.server.store.ScalingGroupStore;
import ai.chalk.compute.server.worker.PoolStatus;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

/** Starts plain scaling groups' replicas as sandboxes of the server's {@link SandboxManager}, in the group's environment. */
public final class ContainerRunners implements RunnerFactory {

    private final SandboxManager sandboxes;
    private final Executor executor;

    public ContainerRunners(SandboxManager sandboxes, Executor executor) {
        this.sandboxes = sandboxes;
        this.executor = executor;
    }

    @Override
    public RevisionRunner start(
            ScalingGroupStore.GroupRecord group,
            ScalingGroupStore.RevisionRecord revision,
            ScalingGroupSpec spec,
            Consumer<PoolStatus> onStatus) {
        ContainerReplicas r =
                new ContainerReplicas(sandboxes, group.environment(), revision.id(), spec, executor, onStatus);
        r.fill();
        return r;
    }
}
