package ai.chalk.compute.server.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsRequest;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionsRequest;
import ai.chalk.compute.proto.runtime.v1.AsyncRemoteCallServiceGrpc;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.RemoteCallStatus;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.proto.volume.v1.CreateVolumeRequest;
import ai.chalk.compute.proto.volume.v1.GetFileRequest;
import ai.chalk.compute.proto.volume.v1.ListVolumesRequest;
import ai.chalk.compute.proto.volume.v1.VolumeInfo;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc;
import ai.chalk.compute.server.RunningServer;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A data directory written by a server from before environments (its database schema has no environment column,
 * volume names are unique server-wide, blobs have no owners) opens in place: everything in it is in environment
 * {@code default}, where clients without an environment find it, and no other environment sees it.
 */
class EnvironmentUpgradeTest {

    /** The tables as the server created them before environments existed. */
    private static final List<String> OLD_SCHEMA = List.of(
            """
            CREATE TABLE sandbox (
              seq BIGINT AUTO_INCREMENT PRIMARY KEY,
              id VARCHAR(64) NOT NULL UNIQUE,
              name VARCHAR(255),
              state VARCHAR(32) NOT NULL,
              image VARCHAR(1024) NOT NULL,
              runtime VARCHAR(32) NOT NULL,
              created_at TIMESTAMP WITH TIME ZONE NOT NULL,
              finished_at TIMESTAMP WITH TIME ZONE,
              status_message VARCHAR(4096),
              request VARBINARY,
              spec VARBINARY,
              build_id VARCHAR(64))""",
            """
            CREATE TABLE volume (
              name VARCHAR(64) PRIMARY KEY,
              created_at TIMESTAMP WITH TIME ZONE NOT NULL)""",
            """
            CREATE TABLE sandbox_snapshot (
              seq BIGINT AUTO_INCREMENT PRIMARY KEY,
              id VARCHAR(64) NOT NULL UNIQUE,
              sandbox_id VARCHAR(64) NOT NULL,
              status VARCHAR(32) NOT NULL,
              status_message VARCHAR(4096),
              created_at TIMESTAMP WITH TIME ZONE NOT NULL,
              completed_at TIMESTAMP WITH TIME ZONE,
              spec VARBINARY)""",
            """
            CREATE TABLE image_build (
              seq BIGINT AUTO_INCREMENT PRIMARY KEY,
              id VARCHAR(64) NOT NULL UNIQUE,
              content_hash VARCHAR(64) NOT NULL,
              status VARCHAR(16) NOT NULL,
              image_ref VARCHAR(1024),
              base_image VARCHAR(1024) NOT NULL,
              spec BLOB NOT NULL,
              error VARCHAR(4096),
              tag VARCHAR(1024),
              created_at TIMESTAMP WITH TIME ZONE NOT NULL,
              finished_at TIMESTAMP WITH TIME ZONE)""",
            "CREATE INDEX image_build_hash ON image_build (content_hash, seq)",
            """
            CREATE TABLE image_build_log (
              build_id VARCHAR(64) NOT NULL,
              seq BIGINT NOT NULL,
              logged_at TIMESTAMP WITH TIME ZONE NOT NULL,
              severity VARCHAR(16) NOT NULL,
              line VARCHAR(8300) NOT NULL,
              PRIMARY KEY (build_id, seq))""",
            """
            CREATE TABLE ext_function (
              seq BIGINT AUTO_INCREMENT PRIMARY KEY,
              id VARCHAR(64) NOT NULL UNIQUE,
              name VARCHAR(255) NOT NULL,
              current_version_id VARCHAR(64),
              created_at TIMESTAMP WITH TIME ZONE NOT NULL,
              updated_at TIMESTAMP WITH TIME ZONE NOT NULL,
              deleted_at TIMESTAMP WITH TIME ZONE)""",
            "CREATE INDEX ext_function_name ON ext_function (name, seq)",
            """
            CREATE TABLE ext_function_version (
              seq BIGINT AUTO_INCREMENT PRIMARY KEY,
              id VARCHAR(64) NOT NULL UNIQUE,
              function_id VARCHAR(64) NOT NULL,
              version INT NOT NULL,
              request BLOB NOT NULL,
              revision_id VARCHAR(64) NOT NULL,
              created_at TIMESTAMP WITH TIME ZONE NOT NULL,
              deleted_at TIMESTAMP WITH TIME ZONE,
              UNIQUE (function_id, version))""",
            """
            CREATE TABLE scaling_group (
              seq BIGINT AUTO_INCREMENT PRIMARY KEY,
              id VARCHAR(64) NOT NULL UNIQUE,
              name VARCHAR(255) NOT NULL,
              kind VARCHAR(16) NOT NULL,
              current_revision_id VARCHAR(64) NOT NULL,
              status VARCHAR(32) NOT NULL,
              status_message VARCHAR(4096),
              created_at TIMESTAMP WITH TIME ZONE NOT NULL,
              updated_at TIMESTAMP WITH TIME ZONE NOT NULL,
              deleted_at TIMESTAMP WITH TIME ZONE)""",
            "CREATE INDEX scaling_group_name ON scaling_group (name, seq)",
            """
            CREATE TABLE scaling_group_revision (
              seq BIGINT AUTO_INCREMENT PRIMARY KEY,
              id VARCHAR(64) NOT NULL UNIQUE,
              group_id VARCHAR(64) NOT NULL,
              spec BLOB NOT NULL,
              created_at TIMESTAMP WITH TIME ZONE NOT NULL)""",
            """
            CREATE TABLE fn_call (
              seq BIGINT AUTO_INCREMENT PRIMARY KEY,
              id VARCHAR(64) NOT NULL UNIQUE,
              function_name VARCHAR(255) NOT NULL,
              version_id VARCHAR(64) NOT NULL,
              name VARCHAR(255) NOT NULL,
              args BLOB NOT NULL,
              state VARCHAR(16) NOT NULL,
              result BLOB,
              error BLOB,
              created_at TIMESTAMP WITH TIME ZONE NOT NULL)""");

    @TempDir
    Path dataDir;

    @Test
    void aDataDirectoryFromBeforeEnvironmentsOpensWithEverythingInDefault() throws Exception {
        byte[] blob = "a blob uploaded before environments".getBytes(StandardCharsets.UTF_8);
        String blobHex =
                HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(blob));
        writeOldDataDirectory(blob, blobHex);

        for (int start = 1; start <= 2; start++) { // the upgrade happens once; a second start finds it done
            try (RunningServer server = RunningServer.start(dataDir)) {
                Channel byDefault = server.channel;
                ManagedChannel dev = RunningServer.authenticated(server.server, "dev");

                var sandboxes = SandboxServiceGrpc.newBlockingStub(byDefault)
                        .listSandboxes(ListSandboxesRequest.newBuilder()
                                .setIncludeTerminated(true)
                                .build())
                        .getSandboxesList();
                assertThat(sandboxes).extracting(s -> s.getId()).contains("old-sandbox");
                assertThat(SandboxServiceGrpc.newBlockingStub(dev)
                                .listSandboxes(ListSandboxesRequest.newBuilder()
                                        .setIncludeTerminated(true)
                                        .build())
                                .getSandboxesList())
                        .isEmpty();
                assertNotFound(() -> SandboxServiceGrpc.newBlockingStub(dev)
                        .getSandbox(GetSandboxRequest.newBuilder()
                                .setSandboxId("old-sandbox")
                                .setIncludeTerminated(true)
                                .build()));

                assertThat(volumes(byDefault)).contains("old-volume");
                assertThat(VolumeServiceGrpc.newBlockingStub(byDefault)
                                .getFile(GetFileRequest.newBuilder()
                                        .setVolumeName("old-volume")
                                        .setPath("kept.txt")
                                        .build())
                                .getData()
                                .toStringUtf8())
                        .isEqualTo("kept");
                if (start == 1) {
                    // the name is unique per environment now: dev may have an old-volume of its own
                    VolumeServiceGrpc.newBlockingStub(dev)
                            .createVolume(CreateVolumeRequest.newBuilder()
                                    .setName("old-volume")
                                    .build());
                }
                assertThat(volumes(dev)).containsExactly("old-volume");

                SandboxSnapshotServiceGrpc.newBlockingStub(byDefault)
                        .getSandboxSnapshot(GetSandboxSnapshotRequest.newBuilder()
                                .setSnapshotId("old-snapshot")
                                .build());
                assertNotFound(() -> SandboxSnapshotServiceGrpc.newBlockingStub(dev)
                        .getSandboxSnapshot(GetSandboxSnapshotRequest.newBuilder()
                                .setSnapshotId("old-snapshot")
                                .build()));

                assertThat(CustomImageServiceGrpc.newBlockingStub(byDefault)
                                .getCustomImage(GetCustomImageRequest.newBuilder()
                                        .setBuildId("old-build")
                                        .build())
                                .getStatus())
                        .isEqualTo("failed");
                assertNotFound(() -> CustomImageServiceGrpc.newBlockingStub(dev)
                        .getCustomImage(GetCustomImageRequest.newBuilder()
                                .setBuildId("old-build")
                                .build()));

                assertThat(ExternalFunctionCatalogServiceGrpc.newBlockingStub(byDefault)
                                .listExternalFunctions(ListExternalFunctionsRequest.newBuilder()
                                        .setIncludeDeleted(true)
                                        .build())
                                .getFunctionsList())
                        .extracting(f -> f.getName())
                        .containsExactly("old-function");
                assertThat(ExternalFunctionCatalogServiceGrpc.newBlockingStub(dev)
                                .listExternalFunctions(ListExternalFunctionsRequest.newBuilder()
                                        .setIncludeDeleted(true)
                                        .build())
                                .getFunctionsList())
                        .isEmpty();

                assertThat(ScalingGroupManagerServiceGrpc.newBlockingStub(byDefault)
                                .getScalingGroup(GetScalingGroupRequest.newBuilder()
                                        .setName("old-group")
                                        .build())
                                .getScalingGroup()
                                .getId())
                        .isEqualTo("sg-old");
                assertNotFound(() -> ScalingGroupManagerServiceGrpc.newBlockingStub(dev)
                        .getScalingGroup(GetScalingGroupRequest.newBuilder()
                                .setName("old-group")
                                .build()));

                BlobRef ref = BlobRef.newBuilder()
                        .setDigest("sha256:" + blobHex)
                        .setSize(blob.length)
                        .build();
                assertThat(BlobServiceGrpc.newBlockingStub(byDefault)
                                .findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                                        .addBlobs(ref)
                                        .build())
                                .getMissingList())
                        .isEmpty();
                assertThat(BlobServiceGrpc.newBlockingStub(dev)
                                .findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                                        .addBlobs(ref)
                                        .build())
                                .getMissingList())
                        .containsExactly(ref);

                if (start == 1) {
                    // the queued call the old server left is recorded failed by the restart, and is default's to read
                    assertNotFound(() -> AsyncRemoteCallServiceGrpc.newBlockingStub(dev)
                            .pollRemoteCall(PollRemoteCallRequest.newBuilder()
                                    .setCallId("call-old")
                                    .build()));
                    assertThat(AsyncRemoteCallServiceGrpc.newBlockingStub(byDefault)
                                    .pollRemoteCall(PollRemoteCallRequest.newBuilder()
                                            .setCallId("call-old")
                                            .build())
                                    .getStatus())
                            .isEqualTo(RemoteCallStatus.REMOTE_CALL_STATUS_FAILED);
                }
                dev.shutdownNow();
            }
        }
    }

    /** What an old server leaves: its database with a row in every table, a volume's files and a blob. */
    private void writeOldDataDirectory(byte[] blob, String blobHex) throws Exception {
        Files.createDirectories(dataDir.resolve("state"));
        String url =
                "jdbc:h2:" + dataDir.resolve("state").resolve("chalk-compute").toAbsolutePath();
        Timestamp now = Timestamp.from(Instant.now());
        byte[] groupSpec = ScalingGroupSpec.newBuilder()
                .setContainerSpec(ChalkContainerSpec.newBuilder()
                        .setName("old-group")
                        .addEntrypoint("sleep")
                        .addEntrypoint("600"))
                .setScalingSpec(ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(0))
                .build()
                .toByteArray();
        try (Connection c = DriverManager.getConnection(url, "sa", "")) {
            try (Statement s = c.createStatement()) {
                for (String ddl : OLD_SCHEMA) {
                    s.execute(ddl);
                }
            }
            insert(
                    c,
                    "INSERT INTO sandbox (id, state, image, runtime, created_at, finished_at, status_message)"
                            + " VALUES ('old-sandbox', 'TERMINATED', '', 'local', ?, ?, 'done')",
                    now,
                    now);
            insert(c, "INSERT INTO volume (name, created_at) VALUES ('old-volume', ?)", now);
            insert(
                    c,
                    "INSERT INTO sandbox_snapshot (id, sandbox_id, status, created_at, completed_at)"
                            + " VALUES ('old-snapshot', 'old-sandbox', 'FAILED', ?, ?)",
                    now,
                    now);
            insert(
                    c,
                    "INSERT INTO image_build (id, content_hash, status, base_image, spec, error, created_at,"
                            + " finished_at) VALUES ('old-build', 'abc', 'FAILED', 'busybox', X'', 'it failed', ?, ?)",
                    now,
                    now);
            insert(
                    c,
                    "INSERT INTO ext_function (id, name, created_at, updated_at, deleted_at)"
                            + " VALUES ('fn-old', 'old-function', ?, ?, ?)",
                    now,
                    now,
                    now);
            insert(
                    c,
                    "INSERT INTO scaling_group (id, name, kind, current_revision_id, status, created_at, updated_at)"
                            + " VALUES ('sg-old', 'old-group', 'container', 'sgr-old', 'ready', ?, ?)",
                    now,
                    now);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO scaling_group_revision (id, group_id, spec,"
                    + " created_at) VALUES ('sgr-old', 'sg-old', ?, ?)")) {
                ps.setBytes(1, groupSpec);
                ps.setTimestamp(2, now);
                ps.executeUpdate();
            }
            insert(
                    c,
                    "INSERT INTO fn_call (id, function_name, version_id, name, args, state, created_at)"
                            + " VALUES ('call-old', 'old-function', 'fnv-old', 'echo', X'00', 'PENDING', ?)",
                    now);
        }
        Path volume = Files.createDirectories(dataDir.resolve("volumes").resolve("old-volume"));
        Files.writeString(volume.resolve("kept.txt"), "kept");
        Path blobFile = dataDir.resolve("blobs")
                .resolve("sha256")
                .resolve(blobHex.substring(0, 2))
                .resolve(blobHex);
        Files.createDirectories(blobFile.getParent());
        Files.write(blobFile, blob);
    }

    private static void insert(Connection c, String sql, Timestamp... timestamps) throws Exception {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < timestamps.length; i++) {
                ps.setTimestamp(i + 1, timestamps[i]);
            }
            ps.executeUpdate();
        }
    }

    private static List<String> volumes(Channel c) {
        return VolumeServiceGrpc.newBlockingStub(c)
                .listVolumes(ListVolumesRequest.getDefaultInstance())
                .getVolumesList()
                .stream()
                .map(VolumeInfo::getName)
                .toList();
    }

    private static void assertNotFound(Runnable call) {
        StatusRuntimeException e = catchThrowableOfType(call::run, StatusRuntimeException.class);
        assertThat(e).isNotNull();
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
    }
}
