package ai.chalk.compute.server.python;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecutePythonResponse;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.exec.RunningCommands;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Python snippets of one sandbox run one at a time, and a snippet waiting for its turn holds a server thread: a client
 * that kept one snippet sleeping and sent more made the server hold a thread for each, without bound. They now count
 * among the environment's running commands ({@link RunningCommands}): past its share, RESOURCE_EXHAUSTED.
 */
class WaitingSnippetsSecurityTest {

    @Test
    void snippetsWaitingTheirTurnCountAmongTheEnvironmentsCommands(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.maxRunningCommands(8))) {
            RunningCommands commands = server.server.runningCommands();
            String sandbox = server.sandboxes()
                    .createSandbox(CreateSandboxRequest.getDefaultInstance())
                    .getSandbox()
                    .getId();
            List<PythonRun> runs = new ArrayList<>();
            try {
                runs.add(PythonRun.start(
                        server.channel,
                        PythonRun.spec(sandbox, "import time\ntime.sleep(600)").build()));
                for (int i = 0; i < 3; i++) {
                    runs.add(PythonRun.start(
                            server.channel,
                            PythonRun.spec(sandbox, "print('waited')").build()));
                }
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> commands.running() == 4);
                PythonRun refused = PythonRun.start(
                        server.channel,
                        PythonRun.spec(sandbox, "print('one too many')").build());
                Throwable end = refused.end.get(30, TimeUnit.SECONDS);
                assertThat(Status.fromThrowable(end).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(Status.fromThrowable(end).getDescription()).contains("this environment runs 4 commands");
                assertThat(refused.events.stream().map(PythonRun.Timed::response))
                        .noneMatch(ExecutePythonResponse::hasStarted);

                runs.get(0).interrupt(); // the sleeper ends, and the waiting ones run in turn
                for (PythonRun waiting : runs.subList(1, runs.size())) {
                    assertThat(waiting.await(Duration.ofSeconds(60)).stdout()).isEqualTo("waited\n");
                }
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> commands.running() == 0);
            } finally {
                runs.forEach(r -> r.requests.cancel("test over", null));
            }
        }
    }
}
