package ai.chalk.compute.sandbox;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesResponse;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import io.grpc.Channel;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sandbox service's calls a {@link SandboxClient} and its {@link Sandbox}es make: requests built, the server's
 * errors translated by {@link ServerCall} for the kind of resource each call names, answers turned into the SDK's
 * values.
 */
final class SandboxCalls {

    /** Under the client's name: that is where users look for what their client did. */
    private static final Logger log = LoggerFactory.getLogger(SandboxClient.class);

    private final SandboxServiceGrpc.SandboxServiceBlockingStub blocking;
    private final SandboxServiceGrpc.SandboxServiceStub async;

    private final ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.SandboxServiceBlockingStub v2;

    private final Channel channel;

    SandboxCalls(Channel channel) {
        this.channel = channel;
        this.blocking = SandboxServiceGrpc.newBlockingStub(channel);
        this.async = SandboxServiceGrpc.newStub(channel);
        this.v2 = ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.newBlockingStub(channel);
    }

    /**
     * Creates a sandbox through {@code chalk.sandbox.v2}, whose spec carries {@code secret_refs} (v1's request has no
     * room for them), and returns it as v1 describes it.
     */
    SandboxInfo create(ai.chalk.compute.proto.container.v1.ChalkContainerSpec spec) {
        // a sandbox being created cannot be missing: what a create names that must exist is the volumes it mounts
        String id = ServerCall.run(
                        ResourceKind.VOLUME,
                        () -> v2.createSandbox(ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest.newBuilder()
                                .setSpec(spec)
                                .build()))
                .getSandbox()
                .getId();
        return get(id);
    }

    SandboxInfo create(CreateSandboxRequest request) {
        // a sandbox being created cannot be missing: what a create names that must exist is the volumes it mounts
        SandboxInfo info =
                SandboxInfo.fromProto(ServerCall.run(ResourceKind.VOLUME, () -> blocking.createSandbox(request))
                        .getSandbox());
        log.info("Sandbox {} created ({})", info.id(), info.state());
        return info;
    }

    SandboxPage list(ListOptions options) {
        if (options.needsV2()) {
            var response = ServerCall.run(ResourceKind.SANDBOX, () -> v2.listSandboxes(options.toV2Request()));
            return new SandboxPage(
                    response.getSandboxesList().stream()
                            .map(SandboxInfo::fromV2)
                            .filter(options::matchesTags)
                            .toList(),
                    response.hasNextCursor() && !response.getNextCursor().isEmpty()
                            ? Optional.of(response.getNextCursor())
                            : Optional.empty());
        }
        ListSandboxesResponse response =
                ServerCall.run(ResourceKind.SANDBOX, () -> blocking.listSandboxes(options.toRequest()));
        return new SandboxPage(
                response.getSandboxesList().stream().map(SandboxInfo::fromProto).toList(),
                response.hasNextCursor() && !response.getNextCursor().isEmpty()
                        ? Optional.of(response.getNextCursor())
                        : Optional.empty());
    }

    /** Every page of the listing, one call each, until the server gives no next cursor. */
    List<SandboxInfo> listAll(ListOptions first) {
        List<SandboxInfo> all = new ArrayList<>();
        ListOptions options = first;
        while (true) {
            SandboxPage page = list(options);
            all.addAll(page.sandboxes());
            Optional<String> next = page.nextCursor();
            if (next.isEmpty() || next.get().isEmpty()) {
                return all;
            }
            if (next.equals(options.cursor())) {
                log.warn("The server returned the same list cursor twice ({}); stopping the listing", next.get());
                return all;
            }
            options = options.cursor(next.get());
        }
    }

    /** The sandbox as v1 describes it (its state, SUSPENDED included), with the tags only v2's spec carries. */
    SandboxInfo get(String id) {
        SandboxInfo info = SandboxInfo.fromProto(ServerCall.run(
                        ResourceKind.SANDBOX,
                        () -> blocking.getSandbox(GetSandboxRequest.newBuilder()
                                .setSandboxId(id)
                                .setIncludeTerminated(true)
                                .build()))
                .getSandbox());
        ai.chalk.compute.proto.container.v1.ChalkContainerSpec spec;
        try {
            spec = ServerCall.run(
                            ResourceKind.SANDBOX,
                            () -> v2.getSandbox(ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest.newBuilder()
                                    .setId(id)
                                    .build()))
                    .getSandbox()
                    .getSpec();
        } catch (ChalkComputeException e) {
            if (e.statusCode() != Status.Code.UNIMPLEMENTED) {
                throw e;
            }
            return info; // a server without sandbox v2 has no tags to show
        }
        return spec.getTagsCount() == 0 ? info : info.withTags(spec.getTagsMap());
    }

    /** Creates a sandbox from a snapshot, with the spec of the sandbox it was taken of. */
    SandboxInfo createFromSnapshot(String snapshotId) {
        String id = ServerCall.run(
                        ResourceKind.SNAPSHOT,
                        () -> v2.createSandbox(ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest.newBuilder()
                                .setSnapshotId(snapshotId)
                                .build()))
                .getSandbox()
                .getId();
        log.info("Sandbox {} created from snapshot {}", id, snapshotId);
        return get(id);
    }

    /** The sessions of a sandbox ({@link Session}), running and ended. */
    List<SessionInfo> sessions(String sandboxId) {
        var stub = ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc.newBlockingStub(channel);
        return ServerCall.run(
                        ResourceKind.SANDBOX,
                        () -> stub.listSessions(ai.chalk.compute.proto.sandbox.v2.ListSessionsRequest.newBuilder()
                                .setSandboxId(sandboxId)
                                .build()))
                .getSessionsList()
                .stream()
                .map(SessionInfo::fromProto)
                .toList();
    }

    void suspend(String id) {
        ServerCall.run(
                ResourceKind.SANDBOX,
                () -> v2.suspendSandbox(ai.chalk.compute.proto.sandbox.v2.SuspendSandboxRequest.newBuilder()
                        .setId(id)
                        .build()));
        log.info("Sandbox {} suspended", id);
    }

    void resume(String id) {
        ServerCall.run(
                ResourceKind.SANDBOX,
                () -> v2.resumeSandbox(ai.chalk.compute.proto.sandbox.v2.ResumeSandboxRequest.newBuilder()
                        .setId(id)
                        .build()));
        log.info("Sandbox {} resumed", id);
    }

    /**
     * @param gracePeriod how long the sandbox's processes get to stop, rounded up to whole seconds; {@code null} for
     *                    the server's default
     */
    void terminate(String id, Duration gracePeriod) {
        TerminateSandboxRequest.Builder request =
                TerminateSandboxRequest.newBuilder().setSandboxId(id);
        if (gracePeriod != null) {
            long seconds = gracePeriod.getSeconds() + (gracePeriod.getNano() > 0 ? 1 : 0);
            request.setGracePeriodSeconds((int) Math.min(Integer.MAX_VALUE, seconds));
        }
        ServerCall.run(ResourceKind.SANDBOX, () -> blocking.terminateSandbox(request.build()));
        log.info("Sandbox {} terminated", id);
    }

    ExecCall exec(String sandboxId, Command command, boolean closeStdin) {
        return ExecCall.start(async, command.toInit(sandboxId), closeStdin, command.outputLimit());
    }
}
