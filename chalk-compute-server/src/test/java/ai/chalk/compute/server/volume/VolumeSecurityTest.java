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
import ai.chalk.compute.proto.volume.v1.ListFilesRequest;
import ai.chalk.compute.proto.volume.v1.PutFileRequest;
import ai.chalk.compute.proto.volume.v1.RemoveFileRequest;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sandbox that mounts a volume attacks the server's file operations on it: it plants links to host files and
 * directories, and swaps a directory and a file with such links in a tight {@code renameat2(RENAME_EXCHANGE)} loop
 * while PutFile, GetFile, RemoveFile and ListFiles hammer paths under them. Host files outside the volume must never be
 * read, written or deleted, and every refusal must say why with a definite status.
 */
@Tag("alone")
class VolumeSecurityTest {

    private static final String SECRET = "host secret: must never leave the host";
    private static final Duration RACE = Duration.ofSeconds(4);

    @TempDir
    Path dataDir;

    @TempDir
    Path host;

    @BeforeEach
    void plantHostCanaries() throws Exception {
        Files.writeString(host.resolve("canary.txt"), SECRET);
        Files.writeString(host.resolve("victim.txt"), "host file: must never be deleted");
        Files.writeString(host.resolve("host-only.txt"), "host file: must never be listed");
        for (Path p : List.of(host.resolve("canary.txt"), host.resolve("victim.txt"), host.resolve("host-only.txt"))) {
            Files.setLastModifiedTime(p, FileTime.fromMillis(1_000_000_000_000L));
        }
    }

    @Test
    void aSandboxSwappingLinksIntoItsVolumeNeverGetsTheServerToTouchHostFiles() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            volumes(server)
                    .createVolume(
                            CreateVolumeRequest.newBuilder().setName("race").build());
            String sandbox = server.sandboxes()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .addVolumes(VolumeMount.newBuilder().setName("race").setMountPath("/data"))
                            .build())
                    .getSandbox()
                    .getId();
            race(server, sandbox, "/data");
            server.terminate(sandbox);
        }
        assertHostUntouched();
    }

    @Test
    void aContainerSwappingLinksIntoItsVolumeNeverGetsTheServerToTouchHostFiles() throws Exception {
        String image = DockerTesting.debianImage(); // perl (perl-base) for renameat2; busybox has no syscall()
        try (RunningServer server = RunningServer.start(dataDir, b -> b.runtime(DockerRuntimeOptions.DEFAULTS))) {
            volumes(server)
                    .createVolume(
                            CreateVolumeRequest.newBuilder().setName("race").build());
            String sandbox = server.sandboxes()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .setImage(image)
                            .addVolumes(VolumeMount.newBuilder().setName("race").setMountPath("/data"))
                            .build())
                    .getSandbox()
                    .getId();
            race(server, sandbox, "/data");
            server.terminate(sandbox);
        }
        assertHostUntouched();
    }

    @Test
    void linksPlantedInAVolumeAreRefusedWhereverTheyAreOnThePath() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = volumes(server);
            api.createVolume(CreateVolumeRequest.newBuilder().setName("links").build());
            String sandbox = server.sandboxes()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .addVolumes(
                                    VolumeMount.newBuilder().setName("links").setMountPath("/data"))
                            .build())
                    .getSandbox()
                    .getId();
            // the volume's host directory is <data-dir>/volumes/links: "../../.." from inside it reaches the host
            Path volumeDir = dataDir.resolve("volumes/links");
            String up = "../".repeat(volumeDir.getNameCount()) + host.toString().substring(1);
            sh(
                    server,
                    sandbox,
                    "set -e; cd /data; mkdir -p real/inner; echo in-volume > real/inner/f.txt;"
                            + " ln -s " + host + " abs; ln -s " + up + " rel; ln -s " + host + "/canary.txt abs.txt;"
                            + " ln -s " + up + "/canary.txt rel.txt; ln -s real middle; ln -s inner real/hop;"
                            + " ln -s /data/real absolute-inside");
            // a link on the way: every operation is refused
            for (String path : List.of(
                    "abs/canary.txt",
                    "rel/canary.txt",
                    "middle/inner/f.txt",
                    "real/hop/f.txt",
                    "absolute-inside/inner/f.txt",
                    "abs/victim.txt",
                    "rel/victim.txt")) {
                expectRefused(() -> api.getFile(GetFileRequest.newBuilder()
                        .setVolumeName("links")
                        .setPath(path)
                        .build()));
                expectRefused(() -> api.putFile(PutFileRequest.newBuilder()
                        .setVolumeName("links")
                        .setPath(path)
                        .setData(ByteString.copyFromUtf8("x"))
                        .build()));
                expectRefused(() -> api.putFile(PutFileRequest.newBuilder()
                        .setVolumeName("links")
                        .setPath(path.replaceFirst("/[^/]*$", "") + "/newdir/x.txt")
                        .setData(ByteString.copyFromUtf8("x"))
                        .build()));
                expectRefused(() -> api.removeFile(RemoveFileRequest.newBuilder()
                        .setVolumeName("links")
                        .setPath(path)
                        .build()));
            }
            // a link at the end of the path is not read through
            for (String path : List.of("abs.txt", "rel.txt")) {
                expectRefused(() -> api.getFile(GetFileRequest.newBuilder()
                        .setVolumeName("links")
                        .setPath(path)
                        .build()));
            }
            // a link at the end of the path is the volume's own entry: removing it removes the link, never its target
            api.removeFile(RemoveFileRequest.newBuilder()
                    .setVolumeName("links")
                    .setPath("abs.txt")
                    .build());
            // putting a file where a link is replaces the link, and writes nothing through it
            api.putFile(PutFileRequest.newBuilder()
                    .setVolumeName("links")
                    .setPath("rel.txt")
                    .setData(ByteString.copyFromUtf8("replaced"))
                    .build());
            assertThat(sh(server, sandbox, "test -L /data/rel.txt && echo link; cat /data/rel.txt")
                            .getStdout()
                            .toStringUtf8())
                    .isEqualTo("replaced");
            assertThat(api.listFiles(ListFilesRequest.newBuilder()
                                    .setVolumeName("links")
                                    .build())
                            .getFilesList())
                    .extracting(FileInfo::getPath)
                    .containsExactly("real/inner/f.txt", "rel.txt");
            assertThat(api.getFile(GetFileRequest.newBuilder()
                                    .setVolumeName("links")
                                    .setPath("real/inner/f.txt")
                                    .build())
                            .getData()
                            .toStringUtf8())
                    .isEqualTo("in-volume\n");
            server.terminate(sandbox);
        }
        assertHostUntouched();
    }

    /**
     * Opening a FIFO blocks, and opening a device runs its driver as root (a container keeps CAP_MKNOD by default, so
     * it can plant one with a host disk's numbers): only regular files are ever opened.
     */
    @Test
    void aFifoADeviceOrADirectoryWhereAFileIsReadIsRefusedWithoutOpeningIt() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = volumes(server);
            api.createVolume(CreateVolumeRequest.newBuilder().setName("fifo").build());
            String sandbox = server.sandboxes()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .addVolumes(VolumeMount.newBuilder().setName("fifo").setMountPath("/data"))
                            .build())
                    .getSandbox()
                    .getId();
            sh(server, sandbox, "mkfifo /data/pipe && mkdir /data/dir");
            // what a container with CAP_MKNOD plants (a local sandbox has no capabilities): /dev/zero's numbers
            Process mknod = new ProcessBuilder(
                            "mknod", dataDir.resolve("volumes/fifo/zero").toString(), "c", "1", "5")
                    .redirectErrorStream(true)
                    .start();
            assertThat(mknod.waitFor())
                    .as(new String(mknod.getInputStream().readAllBytes()))
                    .isZero();
            long started = System.nanoTime();
            for (String path : List.of("pipe", "dir", "zero")) {
                assertThatThrownBy(() -> api.getFile(GetFileRequest.newBuilder()
                                .setVolumeName("fifo")
                                .setPath(path)
                                .build()))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                            assertThat(e.getStatus().getDescription()).contains("not a regular file");
                        });
            }
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started))
                    .isLessThan(5_000);
            assertThat(api.listFiles(ListFilesRequest.newBuilder()
                                    .setVolumeName("fifo")
                                    .build())
                            .getFilesList())
                    .isEmpty();
            server.terminate(sandbox);
        }
    }

    /**
     * A hard link would let the volume's name reach a host file without any link to follow, but the kernel refuses
     * {@code link(2)} across mounts (EXDEV) even on one file system, and a sandbox sees host files only through other
     * mounts than its volume. (PutFile replaces files by rename, so even a hard link the sandbox made between its own
     * files is never written through.)
     */
    @Test
    void aSandboxCannotHardLinkAHostFileIntoItsVolume() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            volumes(server)
                    .createVolume(
                            CreateVolumeRequest.newBuilder().setName("hard").build());
            String sandbox = server.sandboxes()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .addVolumes(VolumeMount.newBuilder().setName("hard").setMountPath("/data"))
                            .build())
                    .getSandbox()
                    .getId();
            ExecCommandResponse r = sh(server, sandbox, "ln /usr/bin/env /data/env; echo $?; ls /data");
            assertThat(r.getStdout().toStringUtf8()).isEqualTo("1\n");
            assertThat(r.getStderr().toStringUtf8()).contains("Invalid cross-device link");
            server.terminate(sandbox);
        }
    }

    /**
     * A volume is a file system of its own: a tenant filling it gets {@code ENOSPC} at its size, not a full server
     * disk; a sandbox mounting it sees no host path in its mountinfo; and a set-id file it plants there is not set-id
     * on the host, where the volume is mounted {@code nosuid,nodev}.
     */
    @Test
    void aVolumeHasASizeOfItsOwnShowsNoHostPathAndIsNosuidOnTheHost() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.volumeSize(64L << 20))) {
            volumes(server)
                    .createVolume(
                            CreateVolumeRequest.newBuilder().setName("sized").build());
            String sandbox = server.sandboxes()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .addVolumes(
                                    VolumeMount.newBuilder().setName("sized").setMountPath("/data"))
                            .build())
                    .getSandbox()
                    .getId();
            ExecCommandResponse fill = sh(
                    server,
                    sandbox,
                    "dd if=/dev/zero of=/data/fill bs=1M count=100 2>&1;"
                            + " echo code=$?; cat /proc/self/mountinfo; ls -A /data");
            String out = fill.getStdout().toStringUtf8();
            assertThat(out)
                    .contains("No space left on device")
                    .contains("code=1")
                    .doesNotContain("lost+found");
            assertThat(out).doesNotContain(dataDir.toString());
            // the server's disk is untouched by it, and the volume still answers
            assertThat(volumes(server)
                            .listFiles(ListFilesRequest.newBuilder()
                                    .setVolumeName("sized")
                                    .build())
                            .getFilesList())
                    .extracting(FileInfo::getPath)
                    .containsExactly("fill");
            Path volume = dataDir.resolve("volumes").resolve("sized");
            String hostMount = Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                    .filter(l -> l.split(" ")[4].equals(volume.toString()))
                    .findFirst()
                    .orElseThrow();
            assertThat(hostMount.split(" ")[5]).contains("nosuid").contains("nodev");
            server.terminate(sandbox);
            volumes(server)
                    .deleteVolume(
                            DeleteVolumeRequest.newBuilder().setName("sized").build());
            assertThat(Files.readString(Path.of("/proc/self/mountinfo"))).doesNotContain(volume.toString());
        }
    }

    /**
     * What a tenant leaves in its volume cannot keep volumes from being mounted at the next start: a {@code lost+found}
     * it filled (the name the file system's own directory had) stays its own, and the volumes after it in the
     * directory are mounted all the same, with their files.
     */
    @Test
    void aTenantsLostAndFoundKeepsNoVolumeUnmountedAcrossARestart() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.volumeSize(64L << 20))) {
            for (String name : List.of("a-tenant", "b-other")) {
                volumes(server)
                        .createVolume(
                                CreateVolumeRequest.newBuilder().setName(name).build());
            }
            String sandbox = server.sandboxes()
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .addVolumes(
                                    VolumeMount.newBuilder().setName("a-tenant").setMountPath("/a"))
                            .addVolumes(
                                    VolumeMount.newBuilder().setName("b-other").setMountPath("/b"))
                            .build())
                    .getSandbox()
                    .getId();
            assertThat(sh(
                                    server,
                                    sandbox,
                                    "mkdir /a/lost+found && echo mine > /a/lost+found/keep"
                                            + " && echo other > /b/data && echo ok")
                            .getStdout()
                            .toStringUtf8())
                    .isEqualTo("ok\n");
            server.terminate(sandbox);
        }
        try (RunningServer server = RunningServer.start(dataDir, b -> b.volumeSize(64L << 20))) {
            assertThat(volumes(server)
                            .getFile(GetFileRequest.newBuilder()
                                    .setVolumeName("a-tenant")
                                    .setPath("lost+found/keep")
                                    .build())
                            .getData()
                            .toStringUtf8())
                    .isEqualTo("mine\n");
            assertThat(volumes(server)
                            .getFile(GetFileRequest.newBuilder()
                                    .setVolumeName("b-other")
                                    .setPath("data")
                                    .build())
                            .getData()
                            .toStringUtf8())
                    .isEqualTo("other\n");
            for (String name : List.of("a-tenant", "b-other")) {
                assertThat(VolumeFileSystems.mounted(dataDir.resolve("volumes").resolve(name)))
                        .as(name)
                        .isTrue();
            }
        }
    }

    /**
     * Sets up, inside the sandbox, a directory {@code d} and a file {@code f} in the volume with links to the host's
     * canary directory and file next to them, then exchanges each with its link as fast as the sandbox can while the
     * API is hammered on paths under {@code d} and on {@code f}.
     */
    private void race(RunningServer server, String sandbox, String mount) throws Exception {
        ExecCommandResponse setUp = sh(
                server,
                sandbox,
                "set -e; cd " + mount + "; mkdir -p d;"
                        + " echo volume-copy > d/canary.txt; echo volume-victim > d/victim.txt; echo volume-file > f;"
                        + " ln -s " + host + " l; ln -s " + host + "/canary.txt lf; echo ready");
        assertThat(setUp.getStdout().toStringUtf8())
                .as("set-up: %s", setUp.getStderr().toStringUtf8())
                .isEqualTo("ready\n");
        String perl = "use Config; my $nr = $Config{archname} =~ /aarch64/ ? 276 : 316;"
                + " my ($d, $l, $f, $lf) = ('" + mount + "/d', '" + mount + "/l', '" + mount + "/f', '" + mount
                + "/lf');"
                + " my $end = time() + " + (RACE.toSeconds() + 3) + "; my $n = 0;"
                + " while (time() < $end) { for (1..500) {"
                + " syscall($nr, -100, $d, -100, $l, 2) == 0 or die \"renameat2: $!\";"
                + " syscall($nr, -100, $f, -100, $lf, 2) == 0 or die \"renameat2: $!\"; $n++ } }"
                + " print \"$n\\n\";";
        CompletableFuture<ExecCommandResponse> swapping = CompletableFuture.supplyAsync(() -> server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(sandbox)
                        .setCommand("perl")
                        .addArgs("-e")
                        .addArgs(perl)
                        .build()));
        Thread.sleep(500); // the loop is running

        var api = volumes(server);
        long descriptorsBefore = openDescriptors();
        Map<Status.Code, AtomicLong> outcomes = new ConcurrentHashMap<>();
        ConcurrentLinkedQueue<String> leaks = new ConcurrentLinkedQueue<>();
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RACE.toMillis());
        List<Runnable> hammers = List.of(
                () -> {
                    String got = call(
                            outcomes,
                            () -> api.getFile(GetFileRequest.newBuilder()
                                            .setVolumeName("race")
                                            .setPath("d/canary.txt")
                                            .build())
                                    .getData()
                                    .toStringUtf8());
                    if (got != null && !got.equals("volume-copy\n")) {
                        leaks.add("GetFile d/canary.txt returned " + got);
                    }
                    got = call(
                            outcomes,
                            () -> api.getFile(GetFileRequest.newBuilder()
                                            .setVolumeName("race")
                                            .setPath("f")
                                            .build())
                                    .getData()
                                    .toStringUtf8());
                    if (got != null && !got.equals("volume-file\n")) {
                        leaks.add("GetFile f returned " + got);
                    }
                },
                () -> {
                    for (String path : List.of("d/written.txt", "d/sub/deeper.txt", "d/victim.txt")) {
                        call(
                                outcomes,
                                () -> api.putFile(PutFileRequest.newBuilder()
                                        .setVolumeName("race")
                                        .setPath(path)
                                        .setData(ByteString.copyFromUtf8("server"))
                                        .build()));
                    }
                },
                () -> {
                    for (String path : List.of("d/victim.txt", "d/written.txt", "d/canary.txt")) {
                        call(
                                outcomes,
                                () -> api.removeFile(RemoveFileRequest.newBuilder()
                                        .setVolumeName("race")
                                        .setPath(path)
                                        .build()));
                    }
                    call(
                            outcomes,
                            () -> api.putFile(PutFileRequest.newBuilder()
                                    .setVolumeName("race")
                                    .setPath("d/canary.txt")
                                    .setData(ByteString.copyFromUtf8("volume-copy\n"))
                                    .build()));
                },
                () -> {
                    List<FileInfo> files = call(
                            outcomes,
                            () -> api.listFiles(ListFilesRequest.newBuilder()
                                            .setVolumeName("race")
                                            .build())
                                    .getFilesList());
                    for (FileInfo f : files == null ? List.<FileInfo>of() : files) {
                        if (f.getPath().contains("host-only") || f.getPath().contains("victim") && f.getSize() > 20) {
                            leaks.add("ListFiles listed " + f.getPath());
                        }
                    }
                });
        List<CompletableFuture<Void>> running = new ArrayList<>();
        for (Runnable hammer : hammers) {
            running.add(CompletableFuture.runAsync(() -> {
                while (System.nanoTime() < end) {
                    hammer.run();
                }
            }));
        }
        CompletableFuture.allOf(running.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        ExecCommandResponse swapped = swapping.get(60, TimeUnit.SECONDS);

        assertThat(leaks)
                .as("what the server handed out from outside the volume")
                .isEmpty();
        assertHostUntouched();
        // (the server runs in this JVM) refused and failed calls close what they opened
        assertThat(openDescriptors()).as("descriptors open in the server").isLessThan(descriptorsBefore + 64);
        assertThat(swapped.getStderr().toStringUtf8()).isEmpty();
        long swaps = Long.parseLong(swapped.getStdout().toStringUtf8().trim());
        assertThat(swaps).as("exchanges the sandbox made").isGreaterThan(1_000);
        Map<Status.Code, Long> seen = new java.util.TreeMap<>();
        outcomes.forEach((code, n) -> seen.put(code, n.get()));
        System.out.printf("volume race: %d exchanges in the sandbox; server answers %s%n", swaps, seen);
        assertThat(seen.keySet())
                .as("every answer is a success or a refusal that says why (UNKNOWN: one that does"
                        + " not; the output shows it)")
                .isSubsetOf(Status.Code.OK, Status.Code.FAILED_PRECONDITION, Status.Code.NOT_FOUND);
        assertThat(seen)
                .as("the race was run: some calls found the directory, some the link")
                .containsKeys(Status.Code.OK, Status.Code.FAILED_PRECONDITION);
    }

    /** Runs one call, counting its status; returns its result, or null when it failed with a status. */
    private static <T> T call(Map<Status.Code, AtomicLong> outcomes, Supplier<T> call) {
        try {
            T result = call.get();
            outcomes.computeIfAbsent(Status.Code.OK, k -> new AtomicLong()).incrementAndGet();
            return result;
        } catch (StatusRuntimeException e) {
            outcomes.computeIfAbsent(e.getStatus().getCode(), k -> new AtomicLong())
                    .incrementAndGet();
            String why = String.valueOf(e.getStatus().getDescription());
            if (e.getStatus().getCode() == Status.Code.FAILED_PRECONDITION
                    && !why.contains("symbolic link")
                    && !why.contains("not a regular file")
                    && !why.contains("is a directory")) {
                outcomes.computeIfAbsent(Status.Code.UNKNOWN, k -> new AtomicLong())
                        .incrementAndGet();
                System.out.println("volume race: a refusal that does not say why: " + why);
            }
            return null;
        }
    }

    private static long openDescriptors() throws Exception {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    private void assertHostUntouched() throws Exception {
        try (Stream<Path> files = Files.list(host)) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .as("nothing was created in or deleted from the host directory")
                    .containsExactlyInAnyOrder("canary.txt", "victim.txt", "host-only.txt");
        }
        assertThat(host.resolve("canary.txt")).hasContent(SECRET);
        assertThat(host.resolve("victim.txt")).hasContent("host file: must never be deleted");
        for (String name : List.of("canary.txt", "victim.txt", "host-only.txt")) {
            assertThat(Files.getLastModifiedTime(host.resolve(name)).toMillis())
                    .as("%s was not written", name)
                    .isEqualTo(1_000_000_000_000L);
        }
    }

    private static void expectRefused(Runnable call) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
            assertThat(e.getStatus().getDescription()).contains("symbolic link").contains("refused");
        });
    }

    private static VolumeServiceGrpc.VolumeServiceBlockingStub volumes(RunningServer server) {
        return VolumeServiceGrpc.newBlockingStub(server.channel).withDeadlineAfter(60, TimeUnit.SECONDS);
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
}
