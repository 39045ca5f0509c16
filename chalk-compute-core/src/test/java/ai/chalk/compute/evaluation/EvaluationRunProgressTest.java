package ai.chalk.compute.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.function.deploy.DeployedFunction;
import ai.chalk.compute.progress.ColorMode;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressMode;
import ai.chalk.compute.progress.ProgressSettings;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import com.acme.Naps;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run's progress as {@code await} shows it (rows done out of the dataset's, while it runs), and the execution
 * modes a user can ask for: the workflow mode meets the server's refusal as a typed exception that says why.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EvaluationRunProgressTest {

    /** Rows of 4 ms naps: 20 batches of a quarter second, 4 at a time, so the run takes over a second. */
    private static final int ROWS = 1280;

    @TempDir
    Path dataDir;

    @Test
    void awaitShowsTheRowsDoneWhileTheRunGoesOnAndTheWorkflowModeIsRefusedSayingWhy() throws Exception {
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        ProgressDisplay progress = ProgressDisplay.of(
                new ProgressSettings(ProgressMode.ON, ColorMode.NEVER, false, false, false, false),
                new PrintStream(stderr, true, StandardCharsets.UTF_8));
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            Evaluation evaluation = napsEvaluation(client, client.evaluations().withProgress(progress), ROWS);

            EvaluationRun run = evaluation.run().await(Duration.ofMinutes(4));

            assertThat(run.status()).as(run.toString()).isEqualTo(EvaluationRunStatus.SUCCEEDED);
            assertThat(run.executionMode()).isEqualTo(EvaluationRunExecutionMode.SERVER);
            String shown = stderr.toString(StandardCharsets.UTF_8);
            Matcher running = Pattern.compile("Running: (\\d+)/" + ROWS + " rows through the task and scorers\n")
                    .matcher(shown);
            List<Integer> done = new ArrayList<>();
            while (running.find()) {
                done.add(Integer.parseInt(running.group(1)));
            }
            assertThat(done).as(shown).isNotEmpty().isSorted();
            assertThat(done).as(shown).anyMatch(d -> d > 0 && d < ROWS);
            assertThat(done.size()).as("a line per tenth at most").isLessThanOrEqualTo(11);
            assertThat(shown).startsWith("Evaluation \"Naps\"\n").contains("└ ✓ Succeeded: " + ROWS + "/" + ROWS);

            // the workflow mode: asked for, refused by a server without an orchestrator, saying so
            assertThatThrownBy(() -> evaluation.run(Map.of("git_sha", "abc"), EvaluationRunExecutionMode.WORKFLOW))
                    .isInstanceOf(FailedPreconditionException.class)
                    .hasMessageContaining("workflow")
                    .hasMessageContaining("this environment has no workflow orchestrator");
            assertThatThrownBy(() ->
                            evaluation.run(Map.of("execution_mode", "workflow"), EvaluationRunExecutionMode.SERVER))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("metadata.execution_mode is \"workflow\"");
            assertThat(evaluation.runs()).extracting(EvaluationRun::id).containsExactly(run.id());
        }
    }

    /**
     * An evaluation of {@code rows} naps of 4 ms each through the deployed {@code nap} task ({@link Naps}), scored by
     * a {@code numeric_close} that every row passes, created through {@code evaluations}.
     */
    static Evaluation napsEvaluation(SandboxClient client, EvaluationClient evaluations, int rows) {
        List<Map<String, Object>> naps = new ArrayList<>();
        for (int i = 0; i < rows; i++) {
            naps.add(Map.of("millis", 4L));
        }
        Dataset dataset = client.datasets().upload("naps", naps);
        List<DeployedFunction> deployed = client.functions().deploy(Naps.class);
        return evaluations.create(
                "Naps",
                dataset,
                EvaluationClientTest.named(deployed, "nap"),
                List.of(Scorers.numericClose(1e9).inputs("output", "millis")),
                null,
                Map.of());
    }
}
