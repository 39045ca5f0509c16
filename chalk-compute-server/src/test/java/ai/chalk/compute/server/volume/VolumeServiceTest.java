package ai.chalk.compute.server.volume;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.VolumeMount;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandResponse;
import ai.chalk.compute.proto.volume.v1.CreateVolumeRequest;
import ai.chalk.compute.proto.volume.v1.DeleteVolumeRequest;
import ai.chalk.compute.proto.volume.v1.FileInfo;
import ai.chalk.compute.proto.volume.v1.GetFileRequest;
import ai.chalk.compute.proto.volume.v1.GetVolumeRequest;
import ai.chalk.compute.proto.volume.v1.ListFilesRequest;
import ai.chalk.compute.proto.volume.v1.ListVolumesRequest;
import ai.chalk.compute.proto.volume.v1.ListVolumesResponse;
import ai.chalk.compute.proto.volume.v1.PutFileRequest;
import ai.chalk.compute.proto.volume.v1.RemoveFileRequest;
import ai.chalk.compute.proto.volume.v1.VolumeInfo;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Volumes over gRPC: their files, mounts in sandboxes, paths that must not escape, and restarts. */
class VolumeServiceTest {

    @TempDir
    Path dataDir;

    private static VolumeServiceGrpc.VolumeServiceBlockingStub volumes(RunningServer server) {
        return VolumeServiceGrpc.newBlockingStub(server.channel);
    }

    private static String sandboxWith(RunningServer server, String volume, String path) {
        return server.sandboxes()
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .addVolumes(VolumeMount.newBuilder().setName(volume).setMountPath(path))
                        .build())
                .getSandbox()
                .getId();
    }

    private static ExecCommandResponse sh(RunningServer server, String sandbox, String script) {
        return server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(sandbox)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script)
                        .build());
    }

    @Test
    void createListGetDeleteAndFiles() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = volumes(server);
            for (String name : List.of("alpha", "beta", "gamma")) {
                assertThat(api.createVolume(CreateVolumeRequest.newBuilder()
                                        .setName(name)
                                        .build())
                                .getVolume()
                                .getName())
                        .isEqualTo(name);
            }
            expect(
                    () -> api.createVolume(
                            CreateVolumeRequest.newBuilder().setName("alpha").build()),
                    Status.Code.ALREADY_EXISTS,
                    "already exists");
            expect(
                    () -> api.createVolume(
                            CreateVolumeRequest.newBuilder().setName("../up").build()),
                    Status.Code.INVALID_ARGUMENT,
                    "volume name");
            expect(
                    () -> api.getVolume(
                            GetVolumeRequest.newBuilder().setName("missing").build()),
                    Status.Code.NOT_FOUND,
                    "volume missing does not exist");

            List<String> names = new ArrayList<>();
            ListVolumesRequest.Builder page = ListVolumesRequest.newBuilder().setPageSize(2);
            while (true) {
                ListVolumesResponse r = api.listVolumes(page.build());
                r.getVolumesList().stream().map(VolumeInfo::getName).forEach(names::add);
                if (r.getNextPageToken().isEmpty()) {
                    break;
                }
                page.setPageToken(r.getNextPageToken());
            }
            assertThat(names).containsExactly("alpha", "beta", "gamma");

            api.putFile(PutFileRequest.newBuilder()
                    .setVolumeName("alpha")
                    .setPath("data/a.txt")
                    .setData(ByteString.copyFromUtf8("A"))
                    .build());
            api.putFile(PutFileRequest.newBuilder()
                    .setVolumeName("alpha")
                    .setPath("/data/b.txt")
                    .setData(ByteString.copyFromUtf8("BB"))
                    .build());
            api.putFile(PutFileRequest.newBuilder()
                    .setVolumeName("alpha")
                    .setPath("other.txt")
                    .setData(ByteString.copyFromUtf8("O"))
                    .build());
            assertThat(api.listFiles(ListFilesRequest.newBuilder()
                                    .setVolumeName("alpha")
                                    .setPrefix("data/")
                                    .build())
                            .getFilesList())
                    .extracting(FileInfo::getPath, FileInfo::getSize)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple("data/a.txt", 1L),
                            org.assertj.core.groups.Tuple.tuple("data/b.txt", 2L));
            assertThat(api.getFile(GetFileRequest.newBuilder()
                                    .setVolumeName("alpha")
                                    .setPath("data/b.txt")
                                    .build())
                            .getData()
                            .toStringUtf8())
                    .isEqualTo("BB");
            api.removeFile(RemoveFileRequest.newBuilder()
                    .setVolumeName("alpha")
                    .setPath("other.txt")
                    .build());
            expect(
                    () -> api.getFile(GetFileRequest.newBuilder()
                            .setVolumeName("alpha")
                            .setPath("other.txt")
                            .build()),
                    Status.Code.NOT_FOUND,
                    "has no file");
            expect(
                    () -> api.putFile(PutFileRequest.newBuilder()
                            .setVolumeName("alpha")
                            .setPath("../../escape")
                            .setData(ByteString.copyFromUtf8("x"))
                            .build()),
                    Status.Code.INVALID_ARGUMENT,
                    "'..'");
            expect(
                    () -> api.getFile(GetFileRequest.newBuilder()
                            .setVolumeName("alpha")
                            .setPath("")
                            .build()),
                    Status.Code.INVALID_ARGUMENT,
                    "volume path");

            api.deleteVolume(DeleteVolumeRequest.newBuilder().setName("beta").build());
            assertThat(api.listVolumes(ListVolumesRequest.getDefaultInstance()).getVolumesList())
                    .extracting(VolumeInfo::getName)
                    .containsExactly("alpha", "gamma");
            assertThat(dataDir.resolve("volumes").resolve("beta")).doesNotExist();
        }
    }

    @Test
    void sandboxesShareAVolumeAndItsContentsSurviveARestart() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            volumes(server)
                    .createVolume(
                            CreateVolumeRequest.newBuilder().setName("cache").build());
            String writer = sandboxWith(server, "cache", "/data");
            String reader = sandboxWith(server, "cache", "/mnt/shared");
            assertThat(sh(server, writer, "echo from-writer > /data/note.txt; echo $?")
                            .getStdout()
                            .toStringUtf8())
                    .isEqualTo("0\n");
            assertThat(sh(server, reader, "cat /mnt/shared/note.txt")
                            .getStdout()
                            .toStringUtf8())
                    .isEqualTo("from-writer\n");
            assertThat(volumes(server)
                            .getFile(GetFileRequest.newBuilder()
                                    .setVolumeName("cache")
                                    .setPath("note.txt")
                                    .build())
                            .getData()
                            .toStringUtf8())
                    .isEqualTo("from-writer\n");
            expect(
                    () -> volumes(server)
                            .deleteVolume(DeleteVolumeRequest.newBuilder()
                                    .setName("cache")
                                    .build()),
                    Status.Code.FAILED_PRECONDITION,
                    "is mounted by running sandbox");
            server.terminate(writer);
            server.terminate(reader);
        }
        try (RunningServer again = RunningServer.start(dataDir)) {
            String sandbox = sandboxWith(again, "cache", "/data");
            assertThat(sh(again, sandbox, "cat /data/note.txt").getStdout().toStringUtf8())
                    .isEqualTo("from-writer\n");
            again.terminate(sandbox);
        }
    }

    @Test
    void oneEnvironmentsVolumesPromiseAtMostItsShareOfTheDisk() throws Exception {
        // volumes are sparse: a tenant creating them and filling each filled the disk every tenant's store is on. With
        // volumes of a quarter of the disk, an environment's share (half the disk, or four volumes) is four
        long size = Files.getFileStore(dataDir).getTotalSpace() / 4 / (1 << 20) * (1 << 20);
        try (RunningServer server = RunningServer.start(dataDir, b -> b.volumeSize(size))) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                var devVolumes = VolumeServiceGrpc.newBlockingStub(dev).withDeadlineAfter(60, TimeUnit.SECONDS);
                for (int i = 0; i < 4; i++) {
                    devVolumes.createVolume(
                            CreateVolumeRequest.newBuilder().setName("v" + i).build());
                }
                expect(
                        () -> devVolumes.createVolume(
                                CreateVolumeRequest.newBuilder().setName("v4").build()),
                        Status.Code.RESOURCE_EXHAUSTED,
                        "this environment has 4 volumes");
                VolumeServiceGrpc.newBlockingStub(prod)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .createVolume(
                                CreateVolumeRequest.newBuilder().setName("p0").build());
                devVolumes.deleteVolume(
                        DeleteVolumeRequest.newBuilder().setName("v0").build());
                devVolumes.createVolume(
                        CreateVolumeRequest.newBuilder().setName("v4").build());
            } finally {
                dev.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                prod.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void aListingPastItsBoundsIsRefusedWhileANarrowerPrefixIsListed() throws Exception {
        // a sandbox can make a million names in a volume: a listing of all of them, held whole in the server's heap
        // (ListFiles has no pages), took gigabytes per call
        try (RunningServer server = RunningServer.start(dataDir)) {
            volumes(server)
                    .createVolume(
                            CreateVolumeRequest.newBuilder().setName("many").build());
            String sandbox = sandboxWith(server, "many", "/data");
            int files = VolumeManager.LISTING_BOUNDS.names() + 1;
            assertThat(sh(
                                    server,
                                    sandbox,
                                    "cd /data && i=0; while [ $i -lt " + files + " ]; do : > f$i; i=$((i+1));"
                                            + " done; mkdir deep && : > deep/one")
                            .getExitCode())
                    .isZero();
            expect(
                    () -> volumes(server)
                            .listFiles(ListFilesRequest.newBuilder()
                                    .setVolumeName("many")
                                    .build()),
                    Status.Code.RESOURCE_EXHAUSTED,
                    "list a narrower prefix");
            assertThat(volumes(server)
                            .listFiles(ListFilesRequest.newBuilder()
                                    .setVolumeName("many")
                                    .setPrefix("f1999")
                                    .build())
                            .getFilesCount())
                    .as("f1999 and f19990 to f19999")
                    .isEqualTo(11);
            assertThat(volumes(server)
                            .listFiles(ListFilesRequest.newBuilder()
                                    .setVolumeName("many")
                                    .setPrefix("deep/")
                                    .build())
                            .getFilesList())
                    .extracting(FileInfo::getPath)
                    .containsExactly("deep/one");
            Awaitility.await()
                    .atMost(Duration.ofSeconds(10))
                    .untilAsserted(() -> assertThat(server.server
                                    .memoryBudgets()
                                    .volumeFileReads()
                                    .used())
                            .as("the listings' bytes are given back once they are sent")
                            .isZero());
            server.terminate(sandbox);
        }
    }

    @Test
    void linksPlantedInAVolumeAreNotFollowedOutsideTheSandbox() throws Exception {
        Path outside = Files.createDirectories(dataDir.resolve("outside"));
        Files.writeString(outside.resolve("secret.txt"), "host secret");
        try (RunningServer server = RunningServer.start(dataDir)) {
            volumes(server)
                    .createVolume(
                            CreateVolumeRequest.newBuilder().setName("trap").build());
            String sandbox = sandboxWith(server, "trap", "/data");
            sh(
                    server,
                    sandbox,
                    "ln -s " + outside + " /data/evil; ln -s " + outside.resolve("secret.txt") + " /data/s.txt");
            expect(
                    () -> volumes(server)
                            .putFile(PutFileRequest.newBuilder()
                                    .setVolumeName("trap")
                                    .setPath("evil/x.txt")
                                    .setData(ByteString.copyFromUtf8("x"))
                                    .build()),
                    Status.Code.FAILED_PRECONDITION,
                    "symbolic link");
            expect(
                    () -> volumes(server)
                            .getFile(GetFileRequest.newBuilder()
                                    .setVolumeName("trap")
                                    .setPath("s.txt")
                                    .build()),
                    Status.Code.FAILED_PRECONDITION,
                    "symbolic link");
            assertThat(volumes(server)
                            .listFiles(ListFilesRequest.newBuilder()
                                    .setVolumeName("trap")
                                    .build())
                            .getFilesList())
                    .isEmpty();
            assertThat(outside.resolve("x.txt")).doesNotExist();
            server.terminate(sandbox);
            volumes(server)
                    .deleteVolume(
                            DeleteVolumeRequest.newBuilder().setName("trap").build());
            assertThat(outside.resolve("secret.txt")).hasContent("host secret");
        }
    }

    @Test
    void badMountsAreRefusedWithTheField() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            volumes(server)
                    .createVolume(CreateVolumeRequest.newBuilder().setName("v").build());
            expect(() -> sandboxWith(server, "v", "/usr/local/data"), Status.Code.INVALID_ARGUMENT, "system directory");
            expect(() -> sandboxWith(server, "v", "relative"), Status.Code.INVALID_ARGUMENT, "mount_path");
            expect(() -> sandboxWith(server, "nope", "/data"), Status.Code.NOT_FOUND, "volume nope does not exist");
        }
    }

    private static void expect(Runnable call, Status.Code code, String messagePart) {
        assertThatThrownBy(call::run).isInstanceOf(StatusRuntimeException.class).satisfies(e -> {
            Status status = ((StatusRuntimeException) e).getStatus();
            assertThat(status.getCode()).isEqualTo(code);
            assertThat(status.getDescription()).contains(messagePart);
        });
    }
}
