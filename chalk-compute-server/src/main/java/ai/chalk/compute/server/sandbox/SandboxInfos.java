package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.proto.sandbox.v1.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v2.SandboxStatus;
import ai.chalk.compute.server.store.SandboxRecord;
import ai.chalk.compute.server.store.SandboxState;
import com.google.protobuf.util.Timestamps;
import java.time.Instant;
import java.util.List;

/** Renders sandbox records as the v1 and v2 wire types. */
final class SandboxInfos {

    private SandboxInfos() {}

    static SandboxInfo v1(SandboxRecord r) {
        SandboxInfo.Builder b = SandboxInfo.newBuilder()
                .setId(r.id())
                .setState(r.state().name())
                .setCreatedAt(r.createdAt().toString());
        r.name().ifPresent(b::setName);
        r.statusMessage().ifPresent(b::setStatusMessage);
        r.buildId().ifPresent(b::setBuildId);
        return b.build();
    }

    static ai.chalk.compute.proto.sandbox.v2.SandboxInfo v2(SandboxRecord r) {
        ai.chalk.compute.proto.sandbox.v2.SandboxInfo.Builder b =
                ai.chalk.compute.proto.sandbox.v2.SandboxInfo.newBuilder()
                        .setId(r.id())
                        .setName(r.name().orElse(""))
                        .setStatus(status(r.state()))
                        .setSpec(ContainerSpecs.of(r))
                        .setCreatedAt(timestamp(r.createdAt()));
        r.statusMessage().ifPresent(b::setStatusMessage);
        r.finishedAt().ifPresent(f -> b.setFinishedAt(timestamp(f)));
        return b.build();
    }

    /**
     * The v2 status of a state. Chalk's SandboxStatus has no "suspended": a suspended sandbox is alive and keeps its
     * processes, so it is RUNNING, and its status_message says it is suspended (v1 shows the state SUSPENDED).
     */
    static SandboxStatus status(SandboxState state) {
        return switch (state) {
            case PENDING -> SandboxStatus.SANDBOX_STATUS_PENDING;
            case RUNNING, SUSPENDED -> SandboxStatus.SANDBOX_STATUS_RUNNING;
            case TERMINATED -> SandboxStatus.SANDBOX_STATUS_TERMINATED;
            case FAILED -> SandboxStatus.SANDBOX_STATUS_FAILED;
        };
    }

    /** The states a v2 status stands for; none for statuses this server never reports (SUCCEEDED, ERROR, UNKNOWN). */
    static List<SandboxState> states(SandboxStatus status) {
        return switch (status) {
            case SANDBOX_STATUS_PENDING -> List.of(SandboxState.PENDING);
            case SANDBOX_STATUS_RUNNING -> List.of(SandboxState.RUNNING, SandboxState.SUSPENDED);
            case SANDBOX_STATUS_TERMINATED -> List.of(SandboxState.TERMINATED);
            case SANDBOX_STATUS_FAILED -> List.of(SandboxState.FAILED);
            default -> List.of();
        };
    }

    static com.google.protobuf.Timestamp timestamp(Instant instant) {
        return Timestamps.fromNanos(instant.getEpochSecond() * 1_000_000_000L + instant.getNano());
    }
}
