package ai.chalk.compute.sample;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.autoconfigure.EmbeddedComputeServer;
import ai.chalk.compute.sandbox.SandboxClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/** The sample app runs its tour on the embedded server, as the README's run command does. */
@SpringBootTest
@ExtendWith(OutputCaptureExtension.class)
class SampleApplicationTest {

    @Autowired
    SandboxClient client;

    @Autowired
    EmbeddedComputeServer embedded;

    @Test
    void tourRunsOnTheEmbeddedServer(CapturedOutput output) {
        assertThat(embedded.isRunning()).isTrue();
        assertThat(embedded.server().port()).as("no TCP port unless asked for").isEmpty();
        String printed = output.getOut();
        assertThat(printed).contains("1. created sandbox").contains("(RUNNING)");
        assertThat(printed).containsPattern("2\\. exec: hello from \\S+, pid \\d+ \\(exit code 0\\)");
        assertThat(printed).contains("[build] fetch", "[build] package", "build finished: exit code 0");
        assertThat(printed).contains("files: todo.txt", "shell exited with 0");
        assertThat(printed).contains("stopped by signal 15 (exit code 143)");
        assertThat(printed).contains("6. terminated: TERMINATED");
        assertThat(client.list()).isEmpty();
    }
}
