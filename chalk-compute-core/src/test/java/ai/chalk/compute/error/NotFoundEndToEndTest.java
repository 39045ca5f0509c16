package ai.chalk.compute.error;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.SandboxDefinition;
import ai.chalk.compute.scaling.ScalingGroup;
import ai.chalk.compute.server.ComputeServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each client, against the real server (in-process; over TCP in {@link TcpNotFoundEndToEndTest}), reports a missing thing as the {@link NotFoundException} of
 * the thing it asked about: a missing function or scaling group is no longer reported as a missing sandbox.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NotFoundEndToEndTest {

    @TempDir
    static Path dataDir;

    private ComputeServer server;
    private SandboxClient client;

    @BeforeAll
    void start() throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).port(0).build().start();
        client = connect(server);
    }

    /** Opens the client under test for the running server. */
    SandboxClient connect(ComputeServer running) {
        return SandboxClient.inProcess(running.inProcessName());
    }

    @AfterAll
    void stop() {
        client.close();
        server.close();
    }

    @Test
    void aMissingFunctionIsAFunctionNotFoundException() {
        assertThatThrownBy(() -> RemoteFunction.fromName(client, "no-such-function"))
                .isExactlyInstanceOf(FunctionNotFoundException.class)
                .isInstanceOf(NotFoundException.class)
                .hasMessageContaining("no-such-function");
        assertThatThrownBy(() -> client.functions().versions("no-such-function"))
                .isExactlyInstanceOf(FunctionNotFoundException.class);
        assertThatThrownBy(() -> client.functions().delete("no-such-function"))
                .isExactlyInstanceOf(FunctionNotFoundException.class);
        assertThatThrownBy(() -> RemoteFunction.fromVersionId(client.channel(), "no-such-version"))
                .isExactlyInstanceOf(FunctionNotFoundException.class)
                .hasMessageContaining("no-such-version");
    }

    @Test
    void everyWayToReachAnUnknownFunctionSaysFunctionNotSandbox() {
        List<ThrowingCallable> ways = List.of(
                () -> RemoteFunction.fromName(client.channel(), "no-such-function"),
                () -> client.functions().readiness("no-such-function", Duration.ofSeconds(10)),
                () -> client.functions().rollback("no-such-function-id", "no-such-version"));
        for (ThrowingCallable way : ways) {
            assertThatThrownBy(way)
                    .isExactlyInstanceOf(FunctionNotFoundException.class)
                    .hasMessageNotContainingAny("sandbox", "Sandbox")
                    .hasMessageContaining("no-such-function");
        }
    }

    @Test
    void aMissingScalingGroupIsAScalingGroupNotFoundException() {
        assertThatThrownBy(() -> ScalingGroup.fromId(client, "no-such-group"))
                .isExactlyInstanceOf(ScalingGroupNotFoundException.class)
                .isInstanceOf(NotFoundException.class)
                .hasMessageContaining("no-such-group");
    }

    @Test
    void aMissingSandboxIsStillASandboxNotFoundException() {
        assertThatThrownBy(() -> client.get("no-such-sandbox"))
                .isExactlyInstanceOf(SandboxNotFoundException.class)
                .isInstanceOf(NotFoundException.class)
                .hasMessageContaining("no-such-sandbox");
        assertThatThrownBy(() -> client.attach("no-such-sandbox").exec("true"))
                .isExactlyInstanceOf(SandboxNotFoundException.class)
                .hasMessageContaining("no-such-sandbox");
    }

    @Test
    void creatingASandboxThatMountsAMissingVolumeNamesTheVolume() {
        SandboxDefinition sandbox =
                Sandbox.builder().mountVolume("no-such-volume", "/data").build();
        assertThatThrownBy(() -> client.create(sandbox))
                .isExactlyInstanceOf(VolumeNotFoundException.class)
                .hasMessageContaining("no-such-volume");
        assertThat(client.list()).as("nothing was created").isEmpty();
    }

    @Test
    void aMissingVolumeAndImageBuildNameThemselves() {
        assertThatThrownBy(() -> client.volumes().get("no-such-volume"))
                .isExactlyInstanceOf(VolumeNotFoundException.class)
                .isInstanceOf(NotFoundException.class);
        assertThatThrownBy(() -> client.images().get("no-such-build"))
                .isExactlyInstanceOf(ImageBuildNotFoundException.class)
                .isInstanceOf(NotFoundException.class);
    }
}
