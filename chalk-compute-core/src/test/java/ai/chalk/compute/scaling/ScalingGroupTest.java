package ai.chalk.compute.scaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupRevisionResponse;
import com.google.protobuf.Timestamp;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The parts of the scaling-group client that need no server; its calls are tested against the server's own service. */
class ScalingGroupTest {

    private final ManagedChannel channel =
            InProcessChannelBuilder.forName("unused-" + System.nanoTime()).build();

    @AfterEach
    void close() {
        channel.shutdownNow();
    }

    @Test
    void aNewGroupRunsOneReplicaOfItsImageUntilToldOtherwise() {
        ScalingGroup group = ScalingGroup.create(channel, "api", "registry.example/api:v1");

        assertThat(group.spec().getContainerSpec().getName()).isEqualTo("api");
        assertThat(group.spec().getContainerSpec().getImage()).isEqualTo("registry.example/api:v1");
        assertThat(group.spec().getScalingSpec().getMinReplicas()).isEqualTo(1);
        assertThat(group.spec().getScalingSpec().getMaxReplicas()).isEqualTo(1);
        assertThat(group.id()).isEmpty();
        assertThat(group.readiness()).isEmpty();

        group.replicas(0, 4).env(Map.of("MODE", "fast"));
        assertThat(group.spec().getScalingSpec().getMinReplicas()).isZero();
        assertThat(group.spec().getScalingSpec().getMaxReplicas()).isEqualTo(4);
        assertThat(group.spec().getContainerSpec().getEnvVarsMap()).containsExactly(Map.entry("MODE", "fast"));
        assertThat(group.spec().getContainerSpec().getImage()).isEqualTo("registry.example/api:v1");
    }

    @Test
    void badInputIsRefusedBeforeAnythingIsSent() {
        assertThatThrownBy(() -> ScalingGroup.create(channel, " ", "img")).hasMessageContaining("needs a name");
        ScalingGroup group = ScalingGroup.create(channel, "api", "img");
        assertThatThrownBy(() -> group.replicas(3, 2)).hasMessageContaining("3..2");
        assertThatThrownBy(() -> group.replicas(0, 0)).isInstanceOf(IllegalArgumentException.class);
        for (Runnable notDeployed :
                List.<Runnable>of(group::revisions, group::refresh, group::delete, () -> group.rollback("sgr-1"))) {
            assertThatThrownBy(notDeployed::run)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("scaling group api has not been deployed; call deploy() first");
        }
    }

    @Test
    void readinessIsNewsOnlyWhenStateCountsOrMessageChange() {
        List<Readiness> polls = List.of(
                readiness("sgr-1", "PENDING", "", 0, 0),
                readiness("sgr-1", "PENDING", "", 0, 0),
                readiness("sgr-1", "PENDING", "pulling image", 0, 0),
                readiness("sgr-1", "PENDING", "pulling image", 0, 1),
                readiness("sgr-1", "READY", "", 1, 1),
                readiness("sgr-1", "READY", "", 1, 1),
                readiness("sgr-2", "READY", "", 1, 1));
        List<String> logged = new ArrayList<>();
        Readiness previous = null;
        for (Readiness poll : polls) {
            if (poll.differsFrom(previous)) {
                logged.add(poll.toString());
            }
            previous = poll;
        }
        assertThat(logged)
                .containsExactly(
                        "PENDING (0 ready, 0 available)",
                        "PENDING (0 ready, 0 available): pulling image",
                        "PENDING (0 ready, 1 available): pulling image",
                        "READY (1 ready, 1 available)");
    }

    @Test
    void readinessAndRevisionsAreReadFromTheServersMessages() {
        Readiness readiness = Readiness.of(ScalingGroupResponse.newBuilder()
                .setRevisionId("sgr-2")
                .setStatus("READY")
                .setStatusMessage("ok")
                .setReadyReplicas(2)
                .setAvailableReplicas(3)
                .build());
        assertThat(readiness).isEqualTo(new Readiness("sgr-2", "READY", "ok", 2, 3));

        var message = ScalingGroupRevisionResponse.newBuilder()
                .setId("sgr-2")
                .setStatus("READY")
                .setCreatedAt(Timestamp.newBuilder().setSeconds(1_700_000_000).setNanos(5))
                .build();
        assertThat(ScalingGroupRevision.of(message, "sgr-2"))
                .isEqualTo(
                        new ScalingGroupRevision("sgr-2", "READY", "", Instant.ofEpochSecond(1_700_000_000, 5), true));
        assertThat(ScalingGroupRevision.of(message, "sgr-1").current()).isFalse();
    }

    private static Readiness readiness(String revision, String status, String message, int ready, int available) {
        return new Readiness(revision, status, message, ready, available);
    }
}
