package ai.chalk.compute.volume;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.error.InvalidRequestException;
import ai.chalk.compute.error.VolumeNotFoundException;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import ai.chalk.compute.server.volume.VolumeManager;
import io.grpc.Status;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Volumes through the client: direct file access, mounts before run, sharing, errors. */
class VolumeClientTest {

    @Test
    void volumesAreSharedBetweenSandboxesAndReadableFromTheClient(@TempDir Path dataDir) throws Exception {
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).build().start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            Volume cache = client.volumes().create("build-cache");
            cache.writeText("config/settings.txt", "threads=4\n");
            assertThatThrownBy(() -> client.volumes().create("build-cache"))
                    .isInstanceOf(ChalkComputeException.class)
                    .satisfies(e ->
                            assertThat(((ChalkComputeException) e).statusCode()).isEqualTo(Status.Code.ALREADY_EXISTS));

            Sandbox writer = client.create(Sandbox.builder().mountVolume("build-cache", "/cache"));
            assertThat(writer.exec("cat", "/cache/config/settings.txt").stdoutText())
                    .isEqualTo("threads=4\n");
            writer.exec("sh", "-c", "echo built > /cache/out.txt");

            Sandbox reader = client.create(Sandbox.builder().mountVolume("build-cache", "/data"));
            assertThat(reader.exec("cat", "/data/out.txt").stdoutText()).isEqualTo("built\n");

            assertThat(cache.readText("out.txt")).isEqualTo("built\n");
            assertThat(cache.files()).extracting(VolumeFile::path).containsExactly("config/settings.txt", "out.txt");
            assertThat(client.volumes().list()).extracting(Volume::name).contains("build-cache");

            assertThatThrownBy(cache::delete)
                    .isInstanceOf(FailedPreconditionException.class)
                    .hasMessageContaining("mounted by running sandbox");
            writer.terminate();
            reader.terminate();
            cache.remove("out.txt");
            assertThatThrownBy(() -> cache.readText("out.txt")).isInstanceOf(VolumeNotFoundException.class);
            cache.delete();
            assertThatThrownBy(() -> client.volumes().get("build-cache"))
                    .isInstanceOf(VolumeNotFoundException.class)
                    .hasMessageContaining("build-cache");
            assertThatThrownBy(() -> client.create(Sandbox.builder().mountVolume("build-cache", "/cache")))
                    .isInstanceOf(ChalkComputeException.class)
                    .hasMessageContaining("does not exist");
            assertThatThrownBy(() -> client.volumes().create("bad name")).isInstanceOf(InvalidRequestException.class);
        }
    }

    @Test
    void aFileOfTheLargestSizeAVolumeTakesWholeComesBackOverTcp(@TempDir Path dataDir) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client =
                        SandboxClient.connect("localhost:" + server.port().orElseThrow())) {
            Volume models = client.volumes().create("models");
            byte[] weights = new byte[VolumeManager.MAX_FILE_BYTES];
            new java.util.Random(7).nextBytes(weights);
            models.writeBytes("weights.bin", weights);
            // the reply is larger than gRPC's default 4 MiB for a message a client takes
            assertThat(models.readBytes("weights.bin")).isEqualTo(weights);
            assertThatThrownBy(() -> models.writeBytes("too-large.bin", new byte[VolumeManager.MAX_FILE_BYTES + 1]))
                    .isInstanceOf(ChalkComputeException.class)
                    .hasMessageContaining(String.valueOf(VolumeManager.MAX_FILE_BYTES));
        }
    }
}
