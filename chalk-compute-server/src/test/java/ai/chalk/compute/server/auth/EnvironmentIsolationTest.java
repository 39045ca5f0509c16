package ai.chalk.compute.server.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.DownloadBlobRequest;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobResponse;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionSourceRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionScheduledRunsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.UpdateExternalFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.AsyncRemoteCallServiceGrpc;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.EnqueueRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.PurgeQueueRequest;
import ai.chalk.compute.proto.runtime.v1.RemoteCallArgs;
import ai.chalk.compute.proto.sandbox.v1.BuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.CustomImageBuildSummary;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc.CustomImageServiceBlockingStub;
import ai.chalk.compute.proto.sandbox.v1.ExecInit;
import ai.chalk.compute.proto.sandbox.v1.ExecRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildLogsRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildUsageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildWorkflowRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesRequest;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.VolumeMount;
import ai.chalk.compute.proto.sandbox.v2.AttachSession;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.DeleteSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxSnapshotsRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSessionsRequest;
import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.ResumeSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshot;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SuspendSandboxRequest;
import ai.chalk.compute.proto.scalinggroup.v1.BatchUpdateScalingGroupStatusRequest;
import ai.chalk.compute.proto.scalinggroup.v1.CreateScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.DeleteScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRevisionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupRevisionsRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupsRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc.ScalingGroupManagerServiceBlockingStub;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.proto.scalinggroup.v1.UpdateScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.UpdateScalingGroupStatusRequest;
import ai.chalk.compute.proto.volume.v1.CreateVolumeRequest;
import ai.chalk.compute.proto.volume.v1.DeleteVolumeRequest;
import ai.chalk.compute.proto.volume.v1.GetFileRequest;
import ai.chalk.compute.proto.volume.v1.GetVolumeRequest;
import ai.chalk.compute.proto.volume.v1.ListFilesRequest;
import ai.chalk.compute.proto.volume.v1.ListVolumesRequest;
import ai.chalk.compute.proto.volume.v1.PutFileRequest;
import ai.chalk.compute.proto.volume.v1.RemoveFileRequest;
import ai.chalk.compute.proto.volume.v1.VolumeInfo;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc.VolumeServiceBlockingStub;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.ByteString;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two clients of one real server that differ only in their environment ({@code dev} and {@code prod}: over TCP a
 * credential of each, in-process the {@code x-chalk-env-id} it names): each environment's sandboxes, volumes, snapshots, image builds, functions, queued calls, scaling
 * groups and blobs are invisible to the other. Every get, list, exec, terminate and delete RPC is tried from the
 * other environment: lists leave the resource out, and the rest answer NOT_FOUND with the very message an id that
 * never existed gets, so that nothing reveals the resource exists. Same-named resources coexist.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EnvironmentIsolationTest {

    private static final String FN = "isolated-function";
    private static final String WEB = "isolated-group";

    @TempDir
    static Path dataDir;

    private RunningServer server;
    private Channel dev;
    private Channel prod;

    @BeforeAll
    void start() throws Exception {
        server = RunningServer.start(dataDir, b -> b.workerReadyTimeout(Duration.ofSeconds(20)));
        // over TCP each client shows a token of a credential of its environment
        dev = RunningServer.authenticated(server.server, "dev");
        prod = RunningServer.authenticated(server.server, "prod");
    }

    @AfterAll
    void stop() throws Exception {
        ((ManagedChannel) dev).shutdownNow();
        ((ManagedChannel) prod).shutdownNow();
        server.close();
    }

    /** The channel with every call naming {@code environment}, as a client configured for it sends. */
    static Channel inEnvironment(Channel channel, String environment) {
        Metadata headers = new Metadata();
        headers.put(TrustedCallers.ENVIRONMENT_HEADER, environment);
        return ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
    }

    /**
     * Asserts that {@code call} answers NOT_FOUND for {@code existing} (another environment's resource) with the same
     * message, but for the name itself, as for {@code unknown} (one that never existed).
     */
    static void hidden(String existing, String unknown, Function<String, ?> call) {
        StatusRuntimeException other = catchThrowableOfType(() -> call.apply(existing), StatusRuntimeException.class);
        StatusRuntimeException never = catchThrowableOfType(() -> call.apply(unknown), StatusRuntimeException.class);
        assertThat(other).as("a call naming another environment's %s", existing).isNotNull();
        assertThat(never).as("a call naming the unknown %s", unknown).isNotNull();
        assertThat(other.getStatus().getCode())
                .as(String.valueOf(other.getStatus()))
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(never.getStatus().getCode())
                .as(String.valueOf(never.getStatus()))
                .isEqualTo(Status.Code.NOT_FOUND);
        assertThat(String.valueOf(other.getStatus().getDescription()).replace(existing, "<name>"))
                .isEqualTo(String.valueOf(never.getStatus().getDescription()).replace(unknown, "<name>"));
    }

    /** As {@link #hidden(String, String, Function)} with a random id standing for one that never existed. */
    static void hidden(String existing, Function<String, ?> call) {
        hidden(existing, UUID.randomUUID().toString(), call);
    }

    /** The status a streaming call ends with after {@code first} (and a half-close) is sent. */
    static <Q, R> StatusRuntimeException streamFails(Function<StreamObserver<R>, StreamObserver<Q>> open, Q first)
            throws Exception {
        CompletableFuture<Throwable> failed = new CompletableFuture<>();
        StreamObserver<Q> requests = open.apply(new StreamObserver<>() {
            @Override
            public void onNext(R value) {}

            @Override
            public void onError(Throwable t) {
                failed.complete(t);
            }

            @Override
            public void onCompleted() {
                failed.complete(null);
            }
        });
        requests.onNext(first);
        requests.onCompleted();
        Throwable t = failed.get(60, TimeUnit.SECONDS);
        assertThat(t).isInstanceOf(StatusRuntimeException.class);
        return (StatusRuntimeException) t;
    }

    private static SandboxServiceGrpc.SandboxServiceBlockingStub v1(Channel c) {
        return SandboxServiceGrpc.newBlockingStub(c).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.SandboxServiceBlockingStub v2(Channel c) {
        return ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.newBlockingStub(c)
                .withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static SandboxProcessServiceGrpc.SandboxProcessServiceBlockingStub processes(Channel c) {
        return SandboxProcessServiceGrpc.newBlockingStub(c).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static SandboxSnapshotServiceGrpc.SandboxSnapshotServiceBlockingStub snapshots(Channel c) {
        return SandboxSnapshotServiceGrpc.newBlockingStub(c).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static VolumeServiceBlockingStub volumes(Channel c) {
        return VolumeServiceGrpc.newBlockingStub(c).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static CustomImageServiceBlockingStub images(Channel c) {
        return CustomImageServiceGrpc.newBlockingStub(c).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static ExternalFunctionCatalogServiceBlockingStub catalog(Channel c) {
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(c).withDeadlineAfter(90, TimeUnit.SECONDS);
    }

    private static ScalingGroupManagerServiceBlockingStub groups(Channel c) {
        return ScalingGroupManagerServiceGrpc.newBlockingStub(c).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static String createSandbox(Channel c, VolumeMount... mounts) {
        return v1(c).createSandbox(CreateSandboxRequest.newBuilder()
                        .addAllVolumes(List.of(mounts))
                        .build())
                .getSandbox()
                .getId();
    }

    private static List<String> sandboxIds(Channel c) {
        return v1(c)
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setIncludeTerminated(true)
                        .build())
                .getSandboxesList()
                .stream()
                .map(SandboxInfo::getId)
                .toList();
    }

    private static List<String> sandboxIdsV2(Channel c) {
        return v2(c)
                .listSandboxes(ai.chalk.compute.proto.sandbox.v2.ListSandboxesRequest.getDefaultInstance())
                .getSandboxesList()
                .stream()
                .map(s -> s.getId())
                .toList();
    }

    private static String shell(Channel c, String sandboxId, String script) {
        var r = processes(c)
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(sandboxId)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script)
                        .build());
        assertThat(r.getExitCode()).as(r.getStderr().toStringUtf8()).isZero();
        return r.getStdout().toStringUtf8();
    }

    @Test
    void sandboxesTheirProcessesAndSessionsAreSeenOnlyInTheirEnvironment() throws Exception {
        String mine = createSandbox(dev);
        String theirs = createSandbox(prod);
        assertThat(sandboxIds(dev)).contains(mine).doesNotContain(theirs);
        assertThat(sandboxIds(prod)).contains(theirs).doesNotContain(mine);
        assertThat(sandboxIdsV2(dev)).contains(mine).doesNotContain(theirs);
        assertThat(sandboxIdsV2(prod)).contains(theirs).doesNotContain(mine);

        // v1
        hidden(
                mine,
                id -> v1(prod).getSandbox(GetSandboxRequest.newBuilder()
                        .setSandboxId(id)
                        .setIncludeTerminated(true)
                        .build()));
        hidden(
                mine,
                id -> v1(prod).terminateSandbox(TerminateSandboxRequest.newBuilder()
                        .setSandboxId(id)
                        .build()));
        hidden(mine, id -> {
            try {
                throw EnvironmentIsolationTest.<ExecRequest, ExecResponse>streamFails(
                        o -> SandboxServiceGrpc.newStub(prod).exec(o),
                        ExecRequest.newBuilder()
                                .setInit(ExecInit.newBuilder().setSandboxId(id).setCommand("true"))
                                .build());
            } catch (StatusRuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        // v2
        hidden(
                mine,
                id -> v2(prod).getSandbox(ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest.newBuilder()
                        .setId(id)
                        .build()));
        hidden(
                mine,
                id -> v2(prod).suspendSandbox(
                                SuspendSandboxRequest.newBuilder().setId(id).build()));
        hidden(
                mine,
                id -> v2(prod).resumeSandbox(
                                ResumeSandboxRequest.newBuilder().setId(id).build()));
        hidden(
                mine,
                id -> v2(prod).terminateSandbox(ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest.newBuilder()
                        .setId(id)
                        .build()));
        // processes and sessions
        hidden(
                mine,
                id -> processes(prod)
                        .execCommand(ExecCommandRequest.newBuilder()
                                .setSandboxId(id)
                                .setCommand("true")
                                .build()));
        hidden(
                mine,
                id -> processes(prod)
                        .listSessions(ListSessionsRequest.newBuilder()
                                .setSandboxId(id)
                                .build()));
        hidden(
                mine,
                id -> processes(prod)
                        .getSession(GetSessionRequest.newBuilder()
                                .setSandboxId(id)
                                .setSessionId("s-1")
                                .build()));
        hidden(
                mine,
                id -> openSession(OpenSessionRequest.newBuilder()
                        .setNewProcess(NewProcess.newBuilder().setSandboxId(id).setCommand("true"))
                        .build()));
        hidden(
                mine,
                id -> openSession(OpenSessionRequest.newBuilder()
                        .setAttachSession(
                                AttachSession.newBuilder().setSandboxId(id).setSessionId("s-1"))
                        .build()));
        hidden(
                mine,
                id -> snapshots(prod)
                        .createSandboxSnapshot(CreateSandboxSnapshotRequest.newBuilder()
                                .setSandboxId(id)
                                .build()));

        // none of that touched the sandbox: it still runs its owner's commands
        assertThat(shell(dev, mine, "echo alive")).isEqualTo("alive\n");
        v1(dev).terminateSandbox(
                        TerminateSandboxRequest.newBuilder().setSandboxId(mine).build());
        v1(prod).terminateSandbox(TerminateSandboxRequest.newBuilder()
                .setSandboxId(theirs)
                .build());
        // a finished sandbox is as hidden as a running one
        hidden(
                mine,
                id -> v1(prod).getSandbox(GetSandboxRequest.newBuilder()
                        .setSandboxId(id)
                        .setIncludeTerminated(true)
                        .build()));
    }

    private StatusRuntimeException openSession(OpenSessionRequest first) {
        try {
            throw EnvironmentIsolationTest.<OpenSessionRequest, OpenSessionResponse>streamFails(
                    o -> SandboxProcessServiceGrpc.newStub(prod).openSession(o), first);
        } catch (StatusRuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void volumesOfTheSameNameAreDifferentVolumesAndAnotherEnvironmentsDoNotExist() {
        for (Channel c : List.of(dev, prod)) {
            volumes(c)
                    .createVolume(
                            CreateVolumeRequest.newBuilder().setName("cache").build());
        }
        volumes(dev)
                .createVolume(
                        CreateVolumeRequest.newBuilder().setName("dev-only").build());
        volumes(dev)
                .putFile(PutFileRequest.newBuilder()
                        .setVolumeName("cache")
                        .setPath("who")
                        .setData(ByteString.copyFromUtf8("dev"))
                        .build());
        volumes(prod)
                .putFile(PutFileRequest.newBuilder()
                        .setVolumeName("cache")
                        .setPath("who")
                        .setData(ByteString.copyFromUtf8("prod"))
                        .build());
        volumes(dev)
                .putFile(PutFileRequest.newBuilder()
                        .setVolumeName("dev-only")
                        .setPath("secret")
                        .setData(ByteString.copyFromUtf8("s"))
                        .build());

        assertThat(read(dev, "cache", "who")).isEqualTo("dev");
        assertThat(read(prod, "cache", "who")).isEqualTo("prod");
        // each its own directory (and file system) on disk
        assertThat(dataDir.resolve("volumes").resolve("dev+cache").resolve("who"))
                .hasContent("dev");
        assertThat(dataDir.resolve("volumes").resolve("prod+cache").resolve("who"))
                .hasContent("prod");
        assertThat(volumeNames(dev)).contains("cache", "dev-only");
        assertThat(volumeNames(prod)).contains("cache").doesNotContain("dev-only");

        String unknown = "never-" + UUID.randomUUID().toString().substring(0, 8);
        hidden(
                "dev-only",
                unknown,
                n -> volumes(prod)
                        .getVolume(GetVolumeRequest.newBuilder().setName(n).build()));
        hidden(
                "dev-only",
                unknown,
                n -> volumes(prod)
                        .listFiles(
                                ListFilesRequest.newBuilder().setVolumeName(n).build()));
        hidden(
                "dev-only",
                unknown,
                n -> volumes(prod)
                        .getFile(GetFileRequest.newBuilder()
                                .setVolumeName(n)
                                .setPath("secret")
                                .build()));
        hidden(
                "dev-only",
                unknown,
                n -> volumes(prod)
                        .putFile(PutFileRequest.newBuilder()
                                .setVolumeName(n)
                                .setPath("planted")
                                .setData(ByteString.copyFromUtf8("x"))
                                .build()));
        hidden(
                "dev-only",
                unknown,
                n -> volumes(prod)
                        .removeFile(RemoveFileRequest.newBuilder()
                                .setVolumeName(n)
                                .setPath("secret")
                                .build()));
        hidden(
                "dev-only",
                unknown,
                n -> volumes(prod)
                        .deleteVolume(
                                DeleteVolumeRequest.newBuilder().setName(n).build()));
        hidden(
                "dev-only",
                unknown,
                n -> v1(prod).createSandbox(CreateSandboxRequest.newBuilder()
                        .addVolumes(VolumeMount.newBuilder().setName(n).setMountPath("/data"))
                        .build()));
        assertThat(read(dev, "dev-only", "secret")).isEqualTo("s");

        // a sandbox mounts its own environment's volume of that name
        String mounting = createSandbox(
                dev,
                VolumeMount.newBuilder().setName("cache").setMountPath("/data").build());
        assertThat(shell(dev, mounting, "cat /data/who")).isEqualTo("dev");
        v1(dev).terminateSandbox(TerminateSandboxRequest.newBuilder()
                .setSandboxId(mounting)
                .build());

        // deleting one leaves the other
        volumes(prod)
                .deleteVolume(DeleteVolumeRequest.newBuilder().setName("cache").build());
        assertThat(read(dev, "cache", "who")).isEqualTo("dev");
        assertThat(volumeNames(prod)).doesNotContain("cache");
    }

    private static String read(Channel c, String volume, String path) {
        return volumes(c)
                .getFile(GetFileRequest.newBuilder()
                        .setVolumeName(volume)
                        .setPath(path)
                        .build())
                .getData()
                .toStringUtf8();
    }

    private static List<String> volumeNames(Channel c) {
        return volumes(c).listVolumes(ListVolumesRequest.getDefaultInstance()).getVolumesList().stream()
                .map(VolumeInfo::getName)
                .toList();
    }

    @Test
    void snapshotsAreTheirSandboxsEnvironments() {
        String sandbox = createSandbox(dev);
        SandboxSnapshot snapshot = snapshots(dev)
                .createSandboxSnapshot(CreateSandboxSnapshotRequest.newBuilder()
                        .setSandboxId(sandbox)
                        .build())
                .getSnapshot();
        hidden(
                snapshot.getId(),
                id -> snapshots(prod)
                        .getSandboxSnapshot(GetSandboxSnapshotRequest.newBuilder()
                                .setSnapshotId(id)
                                .build()));
        hidden(
                snapshot.getId(),
                id -> snapshots(prod)
                        .deleteSandboxSnapshot(DeleteSandboxSnapshotRequest.newBuilder()
                                .setSnapshotId(id)
                                .build()));
        hidden(
                snapshot.getId(),
                id -> v2(prod).createSandbox(ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest.newBuilder()
                        .setSnapshotId(id)
                        .build()));
        assertThat(snapshotIds(prod, ListSandboxSnapshotsRequest.getDefaultInstance()))
                .doesNotContain(snapshot.getId());
        assertThat(snapshotIds(
                        prod,
                        ListSandboxSnapshotsRequest.newBuilder()
                                .setSearch(snapshot.getId())
                                .build()))
                .isEmpty();
        assertThat(snapshotIds(dev, ListSandboxSnapshotsRequest.getDefaultInstance()))
                .contains(snapshot.getId());
        // still whole for its owner
        snapshots(dev)
                .getSandboxSnapshot(GetSandboxSnapshotRequest.newBuilder()
                        .setSnapshotId(snapshot.getId())
                        .build());
        v1(dev).terminateSandbox(TerminateSandboxRequest.newBuilder()
                .setSandboxId(sandbox)
                .build());
    }

    private static List<String> snapshotIds(Channel c, ListSandboxSnapshotsRequest request) {
        return snapshots(c).listSandboxSnapshots(request).getSnapshotsList().stream()
                .map(SandboxSnapshot::getId)
                .toList();
    }

    @Test
    void imageBuildsTheirLogsAndCacheHitsAreTheEnvironments() {
        // a build that fails at once (its base image is nowhere) is a build all the same: a record, logs, a hash
        ImageSpec spec = ImageSpec.newBuilder()
                .setBaseImage("oci:missing-" + UUID.randomUUID())
                .build();
        String mine = images(dev)
                .getOrBuildCustomImage(GetOrBuildCustomImageRequest.newBuilder()
                        .setImageSpec(spec)
                        .build())
                .getBuildId();
        String hash = finished(dev, mine).getContentHash();
        String otherHash = HexFormat.of().formatHex(new byte[32]);

        hidden(
                mine,
                id -> images(prod)
                        .getCustomImage(GetCustomImageRequest.newBuilder()
                                .setBuildId(id)
                                .build()));
        hidden(
                mine,
                id -> images(prod)
                        .getCustomImageBuild(GetCustomImageBuildRequest.newBuilder()
                                .setBuildId(id)
                                .build()));
        hidden(
                hash,
                otherHash,
                h -> images(prod)
                        .getCustomImageBuild(GetCustomImageBuildRequest.newBuilder()
                                .setContentHash(h)
                                .build()));
        hidden(
                mine,
                id -> images(prod)
                        .getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                                .setBuildId(id)
                                .build()));
        hidden(
                hash,
                otherHash,
                h -> images(prod)
                        .getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                                .setContentHash(h)
                                .build()));
        hidden(
                mine,
                id -> images(prod)
                        .getCustomImageBuildWorkflow(GetCustomImageBuildWorkflowRequest.newBuilder()
                                .setBuildId(id)
                                .build()));
        hidden(
                mine,
                id -> images(prod)
                        .getCustomImageBuildUsage(GetCustomImageBuildUsageRequest.newBuilder()
                                .setBuildId(id)
                                .build()));
        hidden(
                hash,
                otherHash,
                h -> images(prod)
                        .getCustomImageBuildUsage(GetCustomImageBuildUsageRequest.newBuilder()
                                .setContentHash(h)
                                .build()));
        hidden(mine, id -> {
            var updates = images(prod)
                    .streamCustomImageBuildUpdates(StreamCustomImageBuildUpdatesRequest.newBuilder()
                            .setBuildId(id)
                            .build());
            return updates.hasNext() ? updates.next() : null;
        });
        assertThat(buildIds(prod)).doesNotContain(mine);
        assertThat(buildIds(dev)).contains(mine);

        // the same spec in another environment is another build, not a hit on the first
        String theirs = images(prod)
                .getOrBuildCustomImage(GetOrBuildCustomImageRequest.newBuilder()
                        .setImageSpec(spec)
                        .build())
                .getBuildId();
        assertThat(theirs).isNotEqualTo(mine);
        finished(prod, theirs);
        String rebuilt = images(prod)
                .buildCustomImage(
                        BuildCustomImageRequest.newBuilder().setImageSpec(spec).build())
                .getBuildId();
        assertThat(rebuilt).isNotIn(mine, theirs);
        finished(prod, rebuilt);
        assertThat(buildIds(dev)).contains(mine).doesNotContain(theirs, rebuilt);
        assertThat(images(dev)
                        .getCustomImageBuild(GetCustomImageBuildRequest.newBuilder()
                                .setContentHash(hash)
                                .build())
                        .getBuild()
                        .getBuildId())
                .isEqualTo(mine);
    }

    private static CustomImageBuildSummary finished(Channel c, String buildId) {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            CustomImageBuildSummary b = images(c)
                    .getCustomImageBuild(GetCustomImageBuildRequest.newBuilder()
                            .setBuildId(buildId)
                            .build())
                    .getBuild();
            if (!b.getStatus().equals("building") || System.nanoTime() > until) {
                assertThat(b.getStatus()).isEqualTo("failed");
                return b;
            }
            sleep(100);
        }
    }

    private static List<String> buildIds(Channel c) {
        return images(c)
                .listCustomImageBuilds(ListCustomImageBuildsRequest.getDefaultInstance())
                .getBuildsList()
                .stream()
                .map(CustomImageBuildSummary::getBuildId)
                .toList();
    }

    @Test
    void functionsTheirVersionsCallsAndCodeAreTheEnvironments() throws Exception {
        Code code = new Code("isolation-" + UUID.randomUUID());
        assertThat(code.upload(dev)).isEqualTo(2);
        CreateExternalFunctionVersionResponse mine = catalog(dev).createExternalFunctionVersion(code.deploy(FN));
        String fnId = mine.getExternalFunctionVersion().getFunctionId();
        String versionId = mine.getExternalFunctionVersion().getId();

        // the code dev uploaded is not prod's to deploy: it is missing, as if nobody had uploaded it
        StatusRuntimeException missing = catchThrowableOfType(
                () -> catalog(prod).createExternalFunctionVersion(code.deploy(FN)), StatusRuntimeException.class);
        assertThat(missing.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(missing.getStatus().getDescription()).isEqualTo("missing code blobs: " + code.manifestDigest);

        hidden(
                fnId,
                id -> catalog(prod)
                        .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                .setFunctionId(id)
                                .build()));
        hidden(
                FN,
                "never-deployed",
                n -> catalog(prod)
                        .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                .setFunctionName(n)
                                .build()));
        hidden(
                versionId,
                id -> catalog(prod)
                        .getExternalFunctionVersion(GetExternalFunctionVersionRequest.newBuilder()
                                .setId(id)
                                .build()));
        hidden(
                FN,
                "never-deployed",
                n -> catalog(prod)
                        .getExternalFunctionVersion(GetExternalFunctionVersionRequest.newBuilder()
                                .setKey(ExternalFunctionVersionKey.newBuilder().setFunctionName(n))
                                .build()));
        hidden(
                versionId,
                id -> catalog(prod)
                        .getExternalFunctionVersionSource(GetExternalFunctionVersionSourceRequest.newBuilder()
                                .setFunctionVersionId(id)
                                .build()));
        hidden(
                FN,
                "never-deployed",
                n -> catalog(prod)
                        .listExternalFunctionVersions(ListExternalFunctionVersionsRequest.newBuilder()
                                .setFunctionName(n)
                                .build()));
        hidden(
                fnId,
                id -> catalog(prod)
                        .listExternalFunctionScheduledRuns(ListExternalFunctionScheduledRunsRequest.newBuilder()
                                .setFunctionId(id)
                                .build()));
        hidden(
                fnId,
                id -> catalog(prod)
                        .updateExternalFunction(UpdateExternalFunctionRequest.newBuilder()
                                .setExternalFunctionId(id)
                                .setSpec(ExternalFunctionVersionSpec.newBuilder()
                                        .setSpec(code.deploy(FN).getSpec())
                                        .setConfig(code.deploy(FN).getConfig()))
                                .build()));
        hidden(
                versionId,
                id -> catalog(prod)
                        .deleteExternalFunctionVersion(DeleteExternalFunctionVersionRequest.newBuilder()
                                .setId(id)
                                .build()));
        hidden(
                fnId,
                id -> catalog(prod)
                        .deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                                .setFunctionId(id)
                                .build()));
        hidden(
                FN,
                "never-deployed",
                n -> catalog(prod)
                        .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                                .setFunction(
                                        ExternalFunctionVersionKey.newBuilder().setFunctionName(n))
                                .setRemoteCallRequest(
                                        CallFunctionRequest.newBuilder().setName("echo"))
                                .build()));
        hidden(
                FN,
                "never-deployed",
                n -> AsyncRemoteCallServiceGrpc.newBlockingStub(prod)
                        .enqueueRemoteCall(EnqueueRemoteCallRequest.newBuilder()
                                .setName(n)
                                .setArgs(RemoteCallArgs.newBuilder().setFeatherBytes(ByteString.copyFromUtf8("x")))
                                .build()));
        assertThat(functionNames(prod)).doesNotContain(FN);
        assertThat(catalog(prod)
                        .listExternalFunctionVersions(ListExternalFunctionVersionsRequest.newBuilder()
                                .setIncludeDeleted(true)
                                .build())
                        .getEntriesList())
                .noneMatch(e -> e.getExternalFunctionVersion().getId().equals(versionId));
        assertThat(functionNames(dev)).contains(FN);

        // a queued call is its environment's: polled only there
        String callId = AsyncRemoteCallServiceGrpc.newBlockingStub(dev)
                .enqueueRemoteCall(EnqueueRemoteCallRequest.newBuilder()
                        .setName(FN)
                        .setArgs(RemoteCallArgs.newBuilder().setFeatherBytes(ByteString.copyFromUtf8("x")))
                        .build())
                .getCallId();
        assertThat(AsyncRemoteCallServiceGrpc.newBlockingStub(prod)
                        .purgeQueue(PurgeQueueRequest.newBuilder().setAll(true).build())
                        .getItemsRemovedByFunctionMap())
                .isEmpty();
        hidden(
                callId,
                "call-" + UUID.randomUUID(),
                id -> AsyncRemoteCallServiceGrpc.newBlockingStub(prod)
                        .pollRemoteCall(
                                PollRemoteCallRequest.newBuilder().setCallId(id).build()));
        AsyncRemoteCallServiceGrpc.newBlockingStub(dev)
                .pollRemoteCall(
                        PollRemoteCallRequest.newBuilder().setCallId(callId).build());

        // prod deploys a function of the same name from the same code once it has uploaded it itself
        assertThat(code.upload(prod)).isEqualTo(2);
        CreateExternalFunctionVersionResponse theirs = catalog(prod).createExternalFunctionVersion(code.deploy(FN));
        assertThat(theirs.getExternalFunctionVersion().getFunctionId()).isNotEqualTo(fnId);
        assertThat(theirs.getExternalFunctionVersion().getVersion()).isEqualTo(1);
        assertThat(theirs.getScalingGroup().getId())
                .isNotEqualTo(mine.getScalingGroup().getId());
        assertThat(catalog(dev)
                        .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                .setFunctionName(FN)
                                .build())
                        .getExternalFunction()
                        .getId())
                .isEqualTo(fnId);
        hidden(
                mine.getScalingGroup().getId(),
                id -> groups(prod)
                        .getScalingGroup(
                                GetScalingGroupRequest.newBuilder().setId(id).build()));
    }

    private static List<String> functionNames(Channel c) {
        return catalog(c)
                .listExternalFunctions(ListExternalFunctionsRequest.newBuilder()
                        .setIncludeDeleted(true)
                        .build())
                .getFunctionsList()
                .stream()
                .map(f -> f.getName())
                .toList();
    }

    @Test
    void scalingGroupsAreTheEnvironments() {
        ScalingGroupResponse mine = groups(dev)
                .createScalingGroup(CreateScalingGroupRequest.newBuilder()
                        .setSpec(group(WEB))
                        .build())
                .getScalingGroup();
        String unknownGroup = "sg-" + UUID.randomUUID();
        hidden(
                mine.getId(),
                unknownGroup,
                id -> groups(prod)
                        .getScalingGroup(
                                GetScalingGroupRequest.newBuilder().setId(id).build()));
        hidden(
                WEB,
                "never-created",
                n -> groups(prod)
                        .getScalingGroup(
                                GetScalingGroupRequest.newBuilder().setName(n).build()));
        hidden(
                mine.getId(),
                unknownGroup,
                id -> groups(prod)
                        .updateScalingGroup(UpdateScalingGroupRequest.newBuilder()
                                .setScalingGroupId(id)
                                .setSpec(group(WEB))
                                .build()));
        hidden(
                mine.getId(),
                unknownGroup,
                id -> groups(prod)
                        .getScalingGroupRevision(GetScalingGroupRevisionRequest.newBuilder()
                                .setScalingGroupId(id)
                                .setRevisionId(mine.getRevisionId())
                                .build()));
        hidden(
                mine.getId(),
                unknownGroup,
                id -> groups(prod)
                        .listScalingGroupRevisions(ListScalingGroupRevisionsRequest.newBuilder()
                                .setScalingGroupId(id)
                                .build()));
        hidden(
                mine.getId(),
                unknownGroup,
                id -> groups(prod)
                        .batchUpdateScalingGroupStatus(BatchUpdateScalingGroupStatusRequest.newBuilder()
                                .addUpdates(UpdateScalingGroupStatusRequest.newBuilder()
                                        .setScalingGroupId(id)
                                        .setStatus("failed"))
                                .build()));
        hidden(
                mine.getId(),
                unknownGroup,
                id -> groups(prod)
                        .deleteScalingGroup(
                                DeleteScalingGroupRequest.newBuilder().setId(id).build()));
        hidden(
                WEB,
                "never-created",
                n -> groups(prod)
                        .deleteScalingGroup(DeleteScalingGroupRequest.newBuilder()
                                .setName(n)
                                .build()));
        assertThat(groupIds(prod)).doesNotContain(mine.getId());

        ScalingGroupResponse theirs = groups(prod)
                .createScalingGroup(CreateScalingGroupRequest.newBuilder()
                        .setSpec(group(WEB))
                        .build())
                .getScalingGroup();
        assertThat(theirs.getId()).isNotEqualTo(mine.getId());
        assertThat(groupIds(dev)).contains(mine.getId()).doesNotContain(theirs.getId());
        assertThat(groups(dev)
                        .getScalingGroup(
                                GetScalingGroupRequest.newBuilder().setName(WEB).build())
                        .getScalingGroup()
                        .getStatus())
                .isNotEqualTo("deleted");
    }

    private static ScalingGroupSpec group(String name) {
        return ScalingGroupSpec.newBuilder()
                .setContainerSpec(ChalkContainerSpec.newBuilder()
                        .setName(name)
                        .addEntrypoint("sleep")
                        .addEntrypoint("600"))
                .setScalingSpec(ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(0))
                .build();
    }

    private static List<String> groupIds(Channel c) {
        return groups(c)
                .listScalingGroups(ListScalingGroupsRequest.newBuilder()
                        .setIncludeDeleted(true)
                        .build())
                .getScalingGroupsList()
                .stream()
                .map(ScalingGroupResponse::getId)
                .toList();
    }

    @Test
    void blobsAnEnvironmentDidNotUploadAreMissingThere() throws Exception {
        byte[] bytes = ("only dev has these " + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8);
        BlobRef ref = ref(bytes);
        assertThat(upload(dev, ref, bytes).getStored()).isTrue();
        assertThat(missing(dev, ref)).isFalse();

        assertThat(missing(prod, ref)).isTrue();
        BlobRef unknown = ref(("nobody has these " + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8));
        hidden(ref.getDigest(), unknown.getDigest(), d -> {
            var chunks = BlobServiceGrpc.newBlockingStub(prod)
                    .downloadBlob(DownloadBlobRequest.newBuilder().setDigest(d).build());
            return chunks.hasNext() ? chunks.next() : null;
        });
        // prod's upload of the same bytes is stored, as it would be were dev's not there
        assertThat(upload(prod, ref, bytes).getStored()).isTrue();
        assertThat(missing(prod, ref)).isFalse();
        assertThat(upload(dev, ref, bytes).getStored()).isFalse();
    }

    private static BlobRef ref(byte[] bytes) throws Exception {
        return BlobRef.newBuilder()
                .setDigest("sha256:"
                        + HexFormat.of()
                                .formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)))
                .setSize(bytes.length)
                .build();
    }

    private static boolean missing(Channel c, BlobRef ref) {
        return BlobServiceGrpc.newBlockingStub(c)
                        .findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                                .addBlobs(ref)
                                .build())
                        .getMissingCount()
                == 1;
    }

    static UploadBlobResponse upload(Channel c, BlobRef ref, byte[] bytes) throws Exception {
        CompletableFuture<UploadBlobResponse> done = new CompletableFuture<>();
        StreamObserver<UploadBlobRequest> up = BlobServiceGrpc.newStub(c).uploadBlob(new StreamObserver<>() {
            @Override
            public void onNext(UploadBlobResponse value) {
                done.complete(value);
            }

            @Override
            public void onError(Throwable t) {
                done.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {}
        });
        up.onNext(UploadBlobRequest.newBuilder().setBlob(ref).build());
        up.onNext(UploadBlobRequest.newBuilder()
                .setData(ByteString.copyFrom(bytes))
                .build());
        up.onCompleted();
        return done.get(60, TimeUnit.SECONDS);
    }

    @Test
    void theInProcessTransportSeparatesEnvironmentsToo() throws Exception {
        ManagedChannel inProcess =
                InProcessChannelBuilder.forName(server.server.inProcessName()).build();
        try {
            Channel a = inEnvironment(inProcess, "dev");
            Channel b = inEnvironment(inProcess, "prod");
            String mine = createSandbox(a);
            assertThat(sandboxIds(b)).doesNotContain(mine);
            hidden(
                    mine,
                    id -> v1(b).getSandbox(GetSandboxRequest.newBuilder()
                            .setSandboxId(id)
                            .build()));
            // the in-process client's dev is the TCP client's dev: one environment, whatever the transport
            assertThat(sandboxIds(dev)).contains(mine);
            String volume = "in-process-" + UUID.randomUUID().toString().substring(0, 8);
            for (Channel c : List.of(a, b)) {
                volumes(c)
                        .createVolume(
                                CreateVolumeRequest.newBuilder().setName(volume).build());
            }
            volumes(a)
                    .putFile(PutFileRequest.newBuilder()
                            .setVolumeName(volume)
                            .setPath("planted")
                            .setData(ByteString.copyFromUtf8("a"))
                            .build());
            // prod's volume of that name is another one: the file is not there
            assertThat(catchThrowableOfType(
                                    () -> volumes(b)
                                            .getFile(GetFileRequest.newBuilder()
                                                    .setVolumeName(volume)
                                                    .setPath("planted")
                                                    .build()),
                                    StatusRuntimeException.class)
                            .getStatus()
                            .getCode())
                    .isEqualTo(Status.Code.NOT_FOUND);
            v1(a).terminateSandbox(TerminateSandboxRequest.newBuilder()
                    .setSandboxId(mine)
                    .build());
        } finally {
            inProcess.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * The smallest code a function can be deployed from: a manifest and one directory entry, no worker classes (its
     * replicas are never needed here: the functions scale from zero).
     */
    static final class Code {
        final byte[] manifest;
        final byte[] entry;
        final String manifestDigest;

        Code(String label) throws Exception {
            var zipped = new java.io.ByteArrayOutputStream();
            try (ZipOutputStream zip = new ZipOutputStream(zipped)) {
                zip.putNextEntry(new ZipEntry("label.txt"));
                zip.write(label.getBytes(StandardCharsets.UTF_8));
                zip.closeEntry();
            }
            entry = zipped.toByteArray();
            manifest = ("{\"entries\":[{\"name\":\"000-label.zip\",\"kind\":\"dir\",\"digest\":\""
                            + ref(entry).getDigest() + "\",\"size\":" + entry.length + "}]}")
                    .getBytes(StandardCharsets.UTF_8);
            manifestDigest = ref(manifest).getDigest();
        }

        /** Uploads what the environment reports missing; how many blobs that was. */
        int upload(Channel c) throws Exception {
            int uploaded = 0;
            for (byte[] bytes : List.of(entry, manifest)) {
                if (missing(c, ref(bytes))) {
                    upload(c, ref(bytes), bytes);
                    uploaded++;
                }
            }
            return uploaded;
        }

        private static void upload(Channel c, BlobRef ref, byte[] bytes) throws Exception {
            EnvironmentIsolationTest.upload(c, ref, bytes);
        }

        CreateExternalFunctionVersionRequest deploy(String name) {
            return CreateExternalFunctionVersionRequest.newBuilder()
                    .setFunctionName(name)
                    .setSpec(ScalingGroupSpec.newBuilder()
                            .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                            .setScalingSpec(
                                    ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(1)))
                    .setConfig(FunctionConfig.newBuilder()
                            .putOptions("chalk_compute.code", manifestDigest)
                            .putOptions("chalk_compute.functions", "echo=t.W#echo")
                            .putOptions("chalk_compute.worker", "plain"))
                    .build();
        }
    }
}
