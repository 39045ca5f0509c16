package ai.chalk.compute.server.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.grpc.UnhealthyReason;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.stub.MetadataUtils;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant (or anything else) fills the file system of the server's data directory, for real: a small tmpfs
 * mounted under the data directory's parent. The server answers clearly instead of failing every call, still
 * terminates sandboxes, says NOT_SERVING with the reason, and recovers by itself once space is freed.
 */
@Tag("alone")
class FullDiskSecurityTest {

    @Test
    void aFullDiskNeverBricksTheServerAndFreeingSpaceHealsItWithoutARestart(@TempDir Path tmp) throws Exception {
        Path mount = Files.createDirectories(tmp.resolve("small-disk"));
        run("mount", "-t", "tmpfs", "-o", "size=32m,mode=0700", "tmpfs", mount.toString());
        try {
            Path dataDir = mount.resolve("data");
            Path filler = mount.resolve("filler");
            try (RunningServer server = RunningServer.start(dataDir)) {
                String before = server.createSandbox();
                assertThat(health(server, new AtomicReference<>())).isEqualTo(ServingStatus.SERVING);

                fill(filler);
                StatusRuntimeException create =
                        catchThrowableOfType(StatusRuntimeException.class, server::createSandbox);
                assertThat(create.getStatus().getCode())
                        .as("%s", create.getStatus())
                        .isIn(Status.Code.RESOURCE_EXHAUSTED, Status.Code.UNAVAILABLE);
                assertThat(create.getStatus().getDescription())
                        .contains("full")
                        .contains("free space")
                        .doesNotContain(dataDir.toString());

                AtomicReference<Metadata> trailers = new AtomicReference<>();
                assertThat(health(server, trailers)).isEqualTo(ServingStatus.NOT_SERVING);
                assertThat(trailers.get().get(UnhealthyReason.KEY)).contains("full");

                // reading still works, and terminate works: the sandbox is gone even if the disk cannot say so
                assertThat(server.sandboxes()
                                .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                                .getSandboxesList())
                        .anyMatch(s -> s.getId().equals(before));
                server.terminate(before);
                assertThat(server.sandboxes()
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setSandboxId(before)
                                        .setIncludeTerminated(true)
                                        .build())
                                .getSandbox()
                                .getState())
                        .isEqualTo("TERMINATED");
                assertThat(ProcessHandle.allProcesses()
                                .filter(p -> p.info().commandLine().orElse("").contains(before)))
                        .isEmpty();

                Files.delete(filler);
                Awaitility.await()
                        .atMost(Duration.ofSeconds(20))
                        .until(() -> health(server, new AtomicReference<>()) == ServingStatus.SERVING);
                String after = server.createSandbox();
                server.terminate(after);
                assertThat(server.server.sandboxCounts().get(SandboxState.TERMINATED))
                        .isEqualTo(2);
            }
            // what was kept in memory while the disk was full reached the store: a restart sees it
            try (RunningServer again = RunningServer.start(dataDir)) {
                assertThat(again.sandboxes()
                                .listSandboxes(ListSandboxesRequest.newBuilder()
                                        .setIncludeTerminated(true)
                                        .build())
                                .getSandboxesList())
                        .allMatch(s -> s.getState().equals("TERMINATED"))
                        .anyMatch(s -> s.getStatusMessage().contains("requested by a client"));
            }
        } finally {
            run("umount", "-l", mount.toString());
        }
    }

    private static ServingStatus health(RunningServer server, AtomicReference<Metadata> trailers) {
        return HealthGrpc.newBlockingStub(server.channel)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .withInterceptors(MetadataUtils.newCaptureMetadataInterceptor(new AtomicReference<>(), trailers))
                .check(HealthCheckRequest.getDefaultInstance())
                .getStatus();
    }

    private static void fill(Path filler) {
        byte[] block = new byte[1 << 16];
        try (OutputStream out = Files.newOutputStream(filler)) {
            while (true) {
                out.write(block);
            }
        } catch (IOException e) {
            assertThat(e.getMessage()).contains("No space left on device");
        }
    }

    private static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).inheritIO().start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", command)).isZero();
    }
}
