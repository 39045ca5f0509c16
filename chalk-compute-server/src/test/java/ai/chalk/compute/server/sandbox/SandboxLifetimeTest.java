package ai.chalk.compute.server.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.server.RunningServer;
import java.nio.file.Path;
import java.time.Duration;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A sandbox that outlives the server's lifetime limit is terminated with every process in it. */
@Tag("alone")
class SandboxLifetimeTest {

    @Test
    void sandboxIsTerminatedWhenItsLifetimeRunsOut(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.sandboxLifetime(Duration.ofSeconds(2)))) {
            String id = server.createSandbox();
            // a daemon that would otherwise run for 1000 s
            server.processes()
                    .execCommand(ExecCommandRequest.newBuilder()
                            .setSandboxId(id)
                            .setCommand("sh")
                            .addArgs("-c")
                            .addArgs("setsid sleep 1000 > /dev/null 2>&1 < /dev/null &")
                            .build());
            Awaitility.await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> {
                SandboxInfo info = server.sandboxes()
                        .getSandbox(GetSandboxRequest.newBuilder()
                                .setSandboxId(id)
                                .setIncludeTerminated(true)
                                .build())
                        .getSandbox();
                assertThat(info.getState()).isEqualTo("TERMINATED");
                assertThat(info.getStatusMessage()).contains("lifetime of PT2S ran out");
            });
            assertThat(ProcessHandle.allProcesses()
                            .filter(p -> p.info().commandLine().orElse("").equals("sleep 1000")))
                    .isEmpty();
        }
    }
}
