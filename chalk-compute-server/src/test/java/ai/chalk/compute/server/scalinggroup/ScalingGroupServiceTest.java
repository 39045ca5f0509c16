package ai.chalk.compute.server.scalinggroup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.scalinggroup.v1.BatchUpdateScalingGroupStatusRequest;
import ai.chalk.compute.proto.scalinggroup.v1.CreateScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.DeleteScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRevisionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupRevisionsRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupsRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupTraffic;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupTrafficTarget;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.proto.scalinggroup.v1.UpdateScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.UpdateScalingGroupStatusRequest;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.store.SandboxState;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Plain scaling groups through the in-process transport: replicas are real sandboxes running the container spec's
 * entrypoint; revisions, rollback, status and deletion.
 */
class ScalingGroupServiceTest {

    @TempDir
    Path dir;

    private static ScalingGroupSpec spec(String name, String seconds, int min) {
        return ScalingGroupSpec.newBuilder()
                .setContainerSpec(ChalkContainerSpec.newBuilder()
                        .setName(name)
                        .addEntrypoint("sleep")
                        .addEntrypoint(seconds))
                .setScalingSpec(ScalingSpec.newBuilder().setMinReplicas(min).setMaxReplicas(min))
                .build();
    }

    @Test
    void groupsRunTheirSpecAndRollBack() throws Exception {
        try (ComputeServer server = ComputeServer.builder().dataDir(dir).build().start()) {
            ManagedChannel channel =
                    InProcessChannelBuilder.forName(server.inProcessName()).build();
            try {
                var groups = ScalingGroupManagerServiceGrpc.newBlockingStub(channel);
                ScalingGroupResponse created = groups.createScalingGroup(CreateScalingGroupRequest.newBuilder()
                                .setSpec(spec("sleepers", "600", 2))
                                .build())
                        .getScalingGroup();
                assertThat(created.getName()).isEqualTo("sleepers");
                String rev1 = created.getRevisionId();
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> groups.getScalingGroup(GetScalingGroupRequest.newBuilder()
                                        .setName("sleepers")
                                        .build())
                                .getScalingGroup()
                                .getStatus()
                                .equals("ready"));
                ScalingGroupResponse ready = groups.getScalingGroup(GetScalingGroupRequest.newBuilder()
                                .setId(created.getId())
                                .build())
                        .getScalingGroup();
                assertThat(ready.getReadyReplicas()).isEqualTo(2);
                assertThat(server.sandboxCounts().get(SandboxState.RUNNING)).isEqualTo(2L);

                assertThatThrownBy(() -> groups.createScalingGroup(CreateScalingGroupRequest.newBuilder()
                                .setSpec(spec("sleepers", "1", 1))
                                .build()))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.ALREADY_EXISTS));

                ScalingGroupResponse updated = groups.updateScalingGroup(UpdateScalingGroupRequest.newBuilder()
                                .setScalingGroupId(created.getId())
                                .setSpec(spec("sleepers", "601", 1))
                                .build())
                        .getScalingGroup();
                assertThat(updated.getRevisionId()).isNotEqualTo(rev1);
                assertThat(updated.getSpec().getContainerSpec().getEntrypoint(1))
                        .isEqualTo("601");
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> server.sandboxCounts().getOrDefault(SandboxState.RUNNING, 0L) == 1L);

                ScalingGroupResponse rolledBack = groups.updateScalingGroup(UpdateScalingGroupRequest.newBuilder()
                                .setScalingGroupId(created.getId())
                                .setTraffic(ScalingGroupTraffic.newBuilder()
                                        .addTargets(ScalingGroupTrafficTarget.newBuilder()
                                                .setScalingGroupRevisionId(rev1)
                                                .setPercent(100)))
                                .build())
                        .getScalingGroup();
                assertThat(rolledBack.getRevisionId()).isEqualTo(rev1);
                assertThat(rolledBack.getSpec().getContainerSpec().getEntrypoint(1))
                        .isEqualTo("600");
                var revisions = groups.listScalingGroupRevisions(ListScalingGroupRevisionsRequest.newBuilder()
                                .setScalingGroupId(created.getId())
                                .build())
                        .getRevisionsList();
                assertThat(revisions).hasSize(2);
                assertThat(revisions.get(1).getLatest()).isTrue();
                assertThat(groups.getScalingGroupRevision(GetScalingGroupRevisionRequest.newBuilder()
                                        .setScalingGroupName("sleepers")
                                        .setRevisionId(rev1)
                                        .build())
                                .getRevision()
                                .getStatus())
                        .isNotEqualTo("inactive");
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> server.sandboxCounts().getOrDefault(SandboxState.RUNNING, 0L) == 2L);

                groups.batchUpdateScalingGroupStatus(BatchUpdateScalingGroupStatusRequest.newBuilder()
                        .addUpdates(UpdateScalingGroupStatusRequest.newBuilder()
                                .setScalingGroupId(created.getId())
                                .setStatus("degraded")
                                .setStatusMessage("observed by a test"))
                        .build());
                assertThat(groups.getScalingGroup(GetScalingGroupRequest.newBuilder()
                                        .setId(created.getId())
                                        .build())
                                .getScalingGroup()
                                .getStatusMessage())
                        .isEqualTo("observed by a test");
                assertThatThrownBy(() ->
                                groups.batchUpdateScalingGroupStatus(BatchUpdateScalingGroupStatusRequest.newBuilder()
                                        .addUpdates(UpdateScalingGroupStatusRequest.newBuilder()
                                                .setScalingGroupId(created.getId())
                                                .setStatus("sleepy"))
                                        .build()))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT));

                assertThat(groups.listScalingGroups(ListScalingGroupsRequest.getDefaultInstance())
                                .getScalingGroupsCount())
                        .isEqualTo(1);
                ScalingGroupResponse deleted = groups.deleteScalingGroup(DeleteScalingGroupRequest.newBuilder()
                                .setName("sleepers")
                                .build())
                        .getScalingGroup();
                assertThat(deleted.getStatus()).isEqualTo("deleted");
                assertThat(server.sandboxCounts().getOrDefault(SandboxState.RUNNING, 0L))
                        .isZero();
                assertThatThrownBy(() -> groups.getScalingGroup(GetScalingGroupRequest.newBuilder()
                                .setName("sleepers")
                                .build()))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
                assertThatThrownBy(() -> groups.createScalingGroup(CreateScalingGroupRequest.newBuilder()
                                .setSpec(spec("", "1", 1))
                                .build()))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                            assertThat(e.getStatus().getDescription()).contains("container_spec.name");
                        });
                // each replica's sandbox keeps the spec: past the bound the group is refused, not its replicas
                ScalingGroupSpec huge = spec("huge", "1", 1);
                ChalkContainerSpec.Builder hugeSpec = huge.getContainerSpec().toBuilder();
                for (int i = 0; i < 5; i++) {
                    hugeSpec.addEntrypoint("x".repeat(120 << 10));
                }
                assertThatThrownBy(() -> groups.createScalingGroup(CreateScalingGroupRequest.newBuilder()
                                .setSpec(huge.toBuilder().setContainerSpec(hugeSpec))
                                .build()))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                            assertThat(e.getStatus().getDescription())
                                    .contains("spec.container_spec (entrypoint, variables, volumes, policies) is 614");
                        });
            } finally {
                channel.shutdownNow();
            }
        }
    }

    /**
     * A replica that could not start (here: its image is not on the server) was never tried again: the group stayed below
     * its minimum until it was updated. Now it is tried again, each time after a longer wait (at once, 1 s, 2 s...).
     */
    @Test
    void aReplicaThatCouldNotStartIsTriedAgainLessAndLessOften() throws Exception {
        try (RunningServer server = RunningServer.start(dir)) {
            ManagedChannel channel = server.channel;
            try {
                var groups = ScalingGroupManagerServiceGrpc.newBlockingStub(channel);
                ScalingGroupSpec missing = spec("imageless", "600", 1).toBuilder()
                        .setContainerSpec(spec("imageless", "600", 1).getContainerSpec().toBuilder()
                                .setImage("oci:no-such-layout"))
                        .build();
                groups.createScalingGroup(
                        CreateScalingGroupRequest.newBuilder().setSpec(missing).build());
                // the first failure is tried again at once, the second after 1 s, the third after 2 s
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> groups.getScalingGroup(GetScalingGroupRequest.newBuilder()
                                        .setName("imageless")
                                        .build())
                                .getScalingGroup()
                                .getStatusMessage()
                                .contains(
                                        "3 replicas in a row died within 60 s of their start: the next starts in 2 s"));
                ScalingGroupResponse group = groups.getScalingGroup(GetScalingGroupRequest.newBuilder()
                                .setName("imageless")
                                .build())
                        .getScalingGroup();
                assertThat(group.getStatus()).isEqualTo("failed");
                assertThat(group.getStatusMessage()).contains("could not start", "no-such-layout");
                groups.deleteScalingGroup(DeleteScalingGroupRequest.newBuilder()
                        .setName("imageless")
                        .build());
            } finally {
                channel.shutdownNow();
            }
        }
    }
}
