package ai.chalk.compute.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.function.deploy.DeployedFunction;
import ai.chalk.compute.progress.ColorMode;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressMode;
import ai.chalk.compute.progress.ProgressSettings;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import ai.chalk.compute.sql.SQLClient;
import com.acme.Capitals;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run end to end through the SDK, in process and over TCP: four rows (one whose task fails) through a deployed task,
 * a deployed scorer and a built-in; the run awaited as a progress group, its score summary, its result dataset read
 * with SQLClient, then a second run, baselines and archiving.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EvaluationRunEndToEndTest {

    @TempDir
    Path dataDir;

    @Test
    void inProcess() throws Exception {
        runEndToEnd(server -> SandboxClient.inProcess(server.inProcessName()));
    }

    @Test
    void overTcp() throws Exception {
        runEndToEnd(server -> SandboxClient.connect("localhost:" + server.port().orElseThrow()));
    }

    private void runEndToEnd(Function<ComputeServer, SandboxClient> connect) throws Exception {
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        ProgressDisplay progress = ProgressDisplay.of(
                new ProgressSettings(ProgressMode.ON, ColorMode.NEVER, false, false, false, false),
                new PrintStream(stderr, true, StandardCharsets.UTF_8));
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client = connect.apply(server);
                SQLClient sql = SQLClient.forChannel(client.channel())) {
            Dataset capitals = client.datasets().upload("capitals", EvaluationClientTest.ROWS);
            List<DeployedFunction> deployed = client.functions().deploy(Capitals.class);
            EvaluationClient evaluations = client.evaluations().withProgress(progress);
            Evaluation evaluation = evaluations.create(
                    "Capitals",
                    capitals,
                    EvaluationClientTest.named(deployed, "capital"),
                    List.of(
                            Scorers.exactMatch().with("case_insensitive", true),
                            EvaluationClientTest.named(deployed, "capitalMatch")),
                    null,
                    Map.of());

            EvaluationRun first = evaluation.run(Map.of("git_sha", "abc123")).await(Duration.ofMinutes(4));

            assertThat(first.status()).as(first.toString()).isEqualTo(EvaluationRunStatus.SUCCEEDED);
            assertThat(first.metadata()).isEqualTo(Map.of("git_sha", "abc123"));
            assertThat(first.completedAt()).isPresent();
            ScoreSummary summary = first.scoreSummary().orElseThrow();
            // France and Peru right, Japan "tokyo" (right ignoring case, half right to capitalMatch), Chad failed: 0
            assertThat(summary.scorer("exact_match").averageScore().getAsDouble())
                    .isCloseTo(0.75, within(1e-9));
            assertThat(summary.scorer("capitalMatch").averageScore().getAsDouble())
                    .isCloseTo(0.625, within(1e-9));
            assertThat(summary.averageScore().getAsDouble()).isCloseTo(0.6875, within(1e-9));
            assertThat(summary.metrics()).containsEntry("rows", 4.0).containsEntry("failed_rows", 1.0);
            assertThat(summary.format()).contains("exact_match", "0.750", "capitalMatch", "0.625", "failed_rows");
            assertThat(stderr.toString(StandardCharsets.UTF_8))
                    .startsWith("Evaluation \"Capitals\"\n")
                    .contains("└ ✓ Succeeded: 4/4 rows, 1 failed, average score 0.688\n");

            // the result is a dataset like any other: SQL reads it
            assertThat(first.resultDataset().orElseThrow().id())
                    .isEqualTo(first.resultDatasetId().orElseThrow());
            List<Map<String, Object>> rows = new ArrayList<>();
            for (Map<String, Object> row : sql.query("SELECT country, output, \"capitalMatch_score\" AS score,"
                            + " error IS NOT NULL AS failed FROM "
                            + first.resultTable().orElseThrow()
                            + " ORDER BY country")
                    .rows()) {
                rows.add(new LinkedHashMap<>(row));
            }
            assertThat(rows)
                    .extracting(r ->
                            r.get("country") + "=" + r.get("output") + ":" + r.get("score") + ":" + r.get("failed"))
                    .containsExactly(
                            "Chad=null:null:true",
                            "France=Paris:1.0:false",
                            "Japan=tokyo:0.5:false",
                            "Peru=Lima:1.0:false");

            // baselines and archiving
            EvaluationRun baseline = first.setBaseline();
            assertThat(baseline.isBaseline()).isTrue();
            EvaluationRun second = evaluation.run().await(Duration.ofMinutes(4));
            assertThat(second.status()).isEqualTo(EvaluationRunStatus.SUCCEEDED);
            assertThat(evaluation.runs()).extracting(EvaluationRun::id).containsExactly(first.id(), second.id());
            assertThat(evaluation.baseline().orElseThrow().id()).isEqualTo(first.id());
            second.setBaseline();
            assertThat(evaluation.baseline().orElseThrow().id())
                    .as("one baseline per evaluation")
                    .isEqualTo(second.id());
            assertThat(evaluations.getRun(first.id()).isBaseline()).isFalse();
            first.archive();
            assertThat(evaluation.runs()).extracting(EvaluationRun::id).containsExactly(second.id());
            assertThat(evaluations.getRun(first.id()).resultRevisionId())
                    .as("an archived run keeps its result")
                    .isEqualTo(first.resultRevisionId());
        }
    }
}
