package ai.chalk.compute.autoconfigure.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** What a developer reads when the embedded server cannot start. */
class EmbeddedServerStartFailureAnalyzerTests {

    @Test
    void namesTheSettingsTheReasonAndWhatToChange() {
        EmbeddedServerStartException failure = new EmbeddedServerStartException(
                "chalk.compute.embedded.runtime=docker",
                new IllegalStateException(
                        "the docker runtime is not part of this server version yet; use --runtime local"));
        FailureAnalysis analysis =
                new EmbeddedServerStartFailureAnalyzer().analyze(new RuntimeException("context failed", failure));
        assertThat(analysis.getDescription())
                .contains("chalk.compute.embedded.runtime=docker")
                .contains("the docker runtime is not part of this server version yet");
        assertThat(analysis.getAction())
                .contains("chalk.compute.embedded.runtime")
                .contains("chalk.compute.target");
    }
}
