package ai.chalk.compute.server.snapshot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.DeleteSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandResponse;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxSnapshotsFilters;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxSnapshotsRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxSnapshotsResponse;
import ai.chalk.compute.proto.sandbox.v2.ResumeSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshot;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotSortOrder;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotStatus;
import ai.chalk.compute.proto.sandbox.v2.SuspendSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.server.RunningServer;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The v2 SandboxSnapshotService over TCP with real sandboxes: a snapshot carries a sandbox's files (links and modes
 * included) into new, independent sandboxes, survives a restart, and is gone with its files once deleted.
 */
@Tag("alone")
class SandboxSnapshotServiceTest {

    @TempDir
    Path dataDir;

    private static String createSandbox(RunningServer server, ChalkContainerSpec spec) {
        return server.sandboxesV2()
                .createSandbox(CreateSandboxRequest.newBuilder().setSpec(spec).build())
                .getSandbox()
                .getId();
    }

    private static SandboxInfo fromSnapshot(RunningServer server, String snapshotId) {
        return server.sandboxesV2()
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSnapshotId(snapshotId)
                        .build())
                .getSandbox();
    }

    private static SandboxSnapshot snapshot(RunningServer server, String sandboxId) {
        return server.snapshots()
                .createSandboxSnapshot(CreateSandboxSnapshotRequest.newBuilder()
                        .setSandboxId(sandboxId)
                        .build())
                .getSnapshot();
    }

    private static SandboxSnapshot getSnapshot(RunningServer server, String id) {
        return server.snapshots()
                .getSandboxSnapshot(
                        GetSandboxSnapshotRequest.newBuilder().setSnapshotId(id).build())
                .getSnapshot();
    }

    private static String sh(RunningServer server, String sandbox, String script) {
        ExecCommandResponse r = server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(sandbox)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script)
                        .build());
        assertThat(r.getExitCode())
                .as("%s: %s", script, r.getStderr().toStringUtf8())
                .isZero();
        return r.getStdout().toStringUtf8();
    }

    private static final String WRITE_FILES = """
            mkdir -p /workspace/proj/sub && cd /workspace/proj
            echo hello > a.txt
            printf '#!/bin/sh\\necho run-ok\\n' > run.sh && chmod 0750 run.sh
            ln -s a.txt link && ln -s /etc/hostname abs-link && ln -s sub dir-link
            ln a.txt hard.txt
            echo deep > sub/deep.txt && chmod 0600 sub/deep.txt
            mkfifo fifo
            echo kept > /tmp/in-tmp
            """;

    private static final String CHECK_FILES = """
            cd /workspace/proj
            cat a.txt; ./run.sh; readlink link; cat link; readlink abs-link; readlink dir-link; cat dir-link/deep.txt
            stat -c '%a %h %F' run.sh a.txt sub/deep.txt fifo; cat /tmp/in-tmp; echo $FROM_SPEC
            """;

    private static final String EXPECTED = """
            hello
            run-ok
            a.txt
            hello
            /etc/hostname
            sub
            deep
            750 1 regular file
            644 2 regular file
            600 1 regular file
            644 1 fifo
            kept
            spec-env
            """;

    @Test
    void aSnapshotSeedsIndependentSandboxesWithTheFilesAsTheyWere() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ChalkContainerSpec spec = ChalkContainerSpec.newBuilder()
                    .setName("origin")
                    .putEnvVars("FROM_SPEC", "spec-env")
                    .build();
            String origin = createSandbox(server, spec);
            sh(server, origin, "umask 022; " + WRITE_FILES);
            assertThat(sh(server, origin, CHECK_FILES)).isEqualTo(EXPECTED);

            SandboxSnapshot snap = snapshot(server, origin);
            assertThat(snap.getStatus()).isEqualTo(SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_COMPLETED);
            assertThat(snap.getSandboxId()).isEqualTo(origin);
            assertThat(snap.getSpec()).isEqualTo(spec);
            assertThat(snap.hasCompletedAt()).isTrue();
            assertThat(snap.hasStatusMessage()).as(snap.getStatusMessage()).isFalse();
            assertThat(getSnapshot(server, snap.getId())).isEqualTo(snap);
            assertThat(dataDir.resolve("snapshots").resolve(snap.getId()).resolve("files/workspace/proj/a.txt"))
                    .hasContent("hello");

            // later changes to the original do not reach the snapshot
            sh(
                    server,
                    origin,
                    "echo changed > /workspace/proj/a.txt; echo later > /workspace/proj/later; rm run.sh"
                            .replace("rm run.sh", "rm /workspace/proj/run.sh"));

            SandboxInfo a = fromSnapshot(server, snap.getId());
            SandboxInfo b = fromSnapshot(server, snap.getId());
            assertThat(a.getSpec()).isEqualTo(spec);
            assertThat(a.getName()).isEqualTo("origin");
            for (SandboxInfo s : List.of(a, b)) {
                assertThat(sh(server, s.getId(), CHECK_FILES)).isEqualTo(EXPECTED);
                assertThat(sh(server, s.getId(), "test -e /workspace/proj/later && echo leaked || echo absent"))
                        .isEqualTo("absent\n");
                assertThat(sh(server, s.getId(), "stat -c %a /tmp")).isEqualTo("1777\n");
            }
            // the two are independent of each other, and of the original
            sh(server, a.getId(), "echo only-a > /workspace/proj/only-a; echo a-was-here >> /workspace/proj/a.txt");
            sh(server, b.getId(), "echo only-b > /workspace/proj/only-b");
            assertThat(sh(server, b.getId(), "ls /workspace/proj; cat /workspace/proj/a.txt"))
                    .doesNotContain("only-a")
                    .contains("only-b")
                    .doesNotContain("a-was-here");
            assertThat(sh(server, a.getId(), "ls /workspace/proj"))
                    .doesNotContain("only-b")
                    .contains("only-a");
            assertThat(sh(server, origin, "ls /workspace/proj; cat /workspace/proj/a.txt"))
                    .doesNotContain("only-a")
                    .doesNotContain("only-b")
                    .contains("changed");

            // a sandbox made from a snapshot can itself be snapshotted
            SandboxSnapshot second = snapshot(server, a.getId());
            assertThat(second.getStatus()).isEqualTo(SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_COMPLETED);
            assertThat(sh(server, fromSnapshot(server, second.getId()).getId(), "cat /workspace/proj/only-a"))
                    .isEqualTo("only-a\n");

            // listing, filtered and paged
            ListSandboxSnapshotsResponse mine = server.snapshots()
                    .listSandboxSnapshots(ListSandboxSnapshotsRequest.newBuilder()
                            .setFilters(ListSandboxSnapshotsFilters.newBuilder()
                                    .addSandboxIds(origin)
                                    .addStatuses("COMPLETED"))
                            .build());
            assertThat(mine.getSnapshotsList())
                    .extracting(SandboxSnapshot::getId)
                    .containsExactly(snap.getId());
            List<String> all = new ArrayList<>();
            ListSandboxSnapshotsRequest.Builder req = ListSandboxSnapshotsRequest.newBuilder()
                    .setLimit(1)
                    .setSortOrder(SandboxSnapshotSortOrder.SANDBOX_SNAPSHOT_SORT_ORDER_ASC);
            while (true) {
                ListSandboxSnapshotsResponse page = server.snapshots().listSandboxSnapshots(req.build());
                page.getSnapshotsList().forEach(s -> all.add(s.getId()));
                if (!page.hasNextCursor()) {
                    break;
                }
                req.setCursor(page.getNextCursor());
            }
            assertThat(all).containsExactly(snap.getId(), second.getId());
            assertThat(server.snapshots()
                            .listSandboxSnapshots(ListSandboxSnapshotsRequest.newBuilder()
                                    .setFilters(ListSandboxSnapshotsFilters.newBuilder()
                                            .addStatuses("SANDBOX_SNAPSHOT_STATUS_FAILED"))
                                    .build())
                            .getSnapshotsCount())
                    .isZero();
            assertThat(server.snapshots()
                            .listSandboxSnapshots(ListSandboxSnapshotsRequest.newBuilder()
                                    .setSearch(second.getId().substring(0, 18))
                                    .build())
                            .getSnapshotsList())
                    .extracting(SandboxSnapshot::getId)
                    .containsExactly(second.getId());
            expectStatus(
                    () -> server.snapshots()
                            .listSandboxSnapshots(ListSandboxSnapshotsRequest.newBuilder()
                                    .setFilters(ListSandboxSnapshotsFilters.newBuilder()
                                            .addStatuses("DONE"))
                                    .build()),
                    Status.Code.INVALID_ARGUMENT,
                    "unknown status \"DONE\"");
        }
    }

    /**
     * Snapshots are copies of writable layers, as many as tenants ask for: one that would leave the server's disk with
     * less than it keeps for itself is FAILED, saying so, and none of its files stay (here, a reserve of all but 48 MiB
     * of what is free, and a sandbox that wrote 128 MiB). Before, every snapshot was kept until the disk was full.
     */
    @Test
    void aSnapshotThatWouldUseTheDisksReserveIsNotKept() throws Exception {
        try (RunningServer server = leaving(48L << 20)) {
            String id = createSandbox(server, ChalkContainerSpec.getDefaultInstance());
            sh(server, id, "head -c 134217728 /dev/urandom > /workspace/big");
            SandboxSnapshot snap = snapshot(server, id);
            assertThat(snap.getStatus()).isEqualTo(SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_FAILED);
            assertThat(snap.getStatusMessage()).contains("MiB free").contains("the snapshot was not kept");
            try (var left = Files.list(dataDir.resolve("snapshots"))) {
                assertThat(left).isEmpty();
            }
        }
    }

    /** A server that keeps for itself all but {@code bytes} of what its disk has free now. */
    private RunningServer leaving(long bytes) throws Exception {
        long free = Files.getFileStore(dataDir).getUsableSpace();
        return RunningServer.start(dataDir, b -> b.diskReserve(free - bytes));
    }

    @Test
    void aSparseFileIsSnapshottedAndRestoredSparse() throws Exception {
        // a 10 GiB file that holds 4 bytes costs its sandbox's layer nothing; copied as 10 GiB of zeros, each
        // snapshot of it wrote the server's disk down to its reserve
        try (RunningServer server = leaving(48L << 20)) {
            String id = createSandbox(server, ChalkContainerSpec.getDefaultInstance());
            sh(server, id, "truncate -s 10G /workspace/sparse && echo end >> /workspace/sparse");
            SandboxSnapshot snap = snapshot(server, id);
            assertThat(snap.getStatus())
                    .as(snap.getStatusMessage())
                    .isEqualTo(SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_COMPLETED);
            String restored = fromSnapshot(server, snap.getId()).getId();
            assertThat(sh(server, restored, "stat -c %s /workspace/sparse; tail -c 4 /workspace/sparse"))
                    .isEqualTo((10L << 30) + 4 + "\nend\n");
        }
    }

    @Test
    void aSnapshotSurvivesARestartAndIsGoneWithItsFilesOnceDeleted() throws Exception {
        String snapshotId;
        try (RunningServer server = RunningServer.start(dataDir)) {
            String origin = createSandbox(server, ChalkContainerSpec.getDefaultInstance());
            sh(server, origin, "echo persisted > /workspace/f; ln -s f /workspace/l; chmod 700 /workspace/f");
            snapshotId = snapshot(server, origin).getId();
        }
        try (RunningServer server = RunningServer.start(dataDir)) {
            SandboxSnapshot snap = getSnapshot(server, snapshotId);
            assertThat(snap.getStatus()).isEqualTo(SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_COMPLETED);
            for (int i = 0; i < 2; i++) {
                String restored = fromSnapshot(server, snapshotId).getId();
                assertThat(sh(server, restored, "cat /workspace/l; readlink /workspace/l; stat -c %a /workspace/f"))
                        .isEqualTo("persisted\nf\n700\n");
            }
            Path files = dataDir.resolve("snapshots").resolve(snapshotId);
            assertThat(files).isDirectory();
            server.snapshots()
                    .deleteSandboxSnapshot(DeleteSandboxSnapshotRequest.newBuilder()
                            .setSnapshotId(snapshotId)
                            .build());
            assertThat(Files.exists(files, LinkOption.NOFOLLOW_LINKS)).isFalse();
            expectStatus(() -> getSnapshot(server, snapshotId), Status.Code.NOT_FOUND, "does not exist");
            expectStatus(
                    () -> server.snapshots()
                            .deleteSandboxSnapshot(DeleteSandboxSnapshotRequest.newBuilder()
                                    .setSnapshotId(snapshotId)
                                    .build()),
                    Status.Code.NOT_FOUND,
                    "does not exist");
            expectStatus(
                    () -> server.snapshots()
                            .deleteSandboxSnapshot(DeleteSandboxSnapshotRequest.newBuilder()
                                    .setSnapshotId("nope")
                                    .build()),
                    Status.Code.NOT_FOUND,
                    "snapshot nope does not exist");
            expectStatus(() -> fromSnapshot(server, snapshotId), Status.Code.NOT_FOUND, "does not exist");
        }
    }

    @Test
    void snapshotsOfSuspendedStoppedAndUnknownSandboxes() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            String id = createSandbox(server, ChalkContainerSpec.getDefaultInstance());
            sh(server, id, "echo before > /workspace/f");
            server.sandboxesV2()
                    .suspendSandbox(SuspendSandboxRequest.newBuilder().setId(id).build());
            SandboxSnapshot snap = snapshot(server, id);
            assertThat(snap.getStatus()).isEqualTo(SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_COMPLETED);
            // still suspended after the snapshot
            expectStatus(() -> sh(server, id, "true"), Status.Code.FAILED_PRECONDITION, "is suspended");
            server.sandboxesV2()
                    .resumeSandbox(ResumeSandboxRequest.newBuilder().setId(id).build());
            assertThat(sh(server, fromSnapshot(server, snap.getId()).getId(), "cat /workspace/f"))
                    .isEqualTo("before\n");
            // and a running sandbox runs on after one
            SandboxSnapshot again = snapshot(server, id);
            assertThat(again.getStatus()).isEqualTo(SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_COMPLETED);
            assertThat(sh(server, id, "cat /workspace/f")).isEqualTo("before\n");
            assertThat(server.sandboxesV2()
                            .getSandbox(GetSandboxRequest.newBuilder().setId(id).build())
                            .getSandbox()
                            .getStatusMessage())
                    .doesNotContain("suspended at");

            server.sandboxesV2()
                    .terminateSandbox(
                            TerminateSandboxRequest.newBuilder().setId(id).build());
            expectStatus(() -> snapshot(server, id), Status.Code.FAILED_PRECONDITION, "TERMINATED");
            expectStatus(() -> snapshot(server, "nope"), Status.Code.NOT_FOUND, "sandbox nope does not exist");
            expectStatus(() -> snapshot(server, ""), Status.Code.INVALID_ARGUMENT, "sandbox_id is required");
            expectStatus(() -> getSnapshot(server, ""), Status.Code.INVALID_ARGUMENT, "snapshot_id is required");
            // the snapshot outlives its sandbox
            assertThat(sh(server, fromSnapshot(server, again.getId()).getId(), "cat /workspace/f"))
                    .isEqualTo("before\n");
        }
    }

    private static void expectStatus(Runnable call, Status.Code code, String messagePart) {
        assertThatThrownBy(call::run).isInstanceOf(StatusRuntimeException.class).satisfies(e -> {
            Status status = ((StatusRuntimeException) e).getStatus();
            assertThat(status.getCode()).as(status.toString()).isEqualTo(code);
            assertThat(status.getDescription()).contains(messagePart);
        });
    }
}
