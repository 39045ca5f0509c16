package ai.chalk.compute.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.error.EvaluationNotFoundException;
import ai.chalk.compute.error.InvalidRequestException;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.deploy.DeployedFunction;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import com.acme.Capitals;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Suites and evaluations through the SDK against a real server, in process and over TCP: a dataset uploaded, a task and
 * a scorer deployed in the background and pinned by their versions (given as handles, by name and as remote
 * functions), built-ins with options, suites, listing, and the refusals a user meets.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class EvaluationClientTest {

    static final List<Map<String, Object>> ROWS = List.of(
            Map.of("country", "France", "expected", "Paris"),
            Map.of("country", "Japan", "expected", "Tokyo"),
            Map.of("country", "Peru", "expected", "Lima"),
            Map.of("country", "Chad", "expected", "N'Djamena"));

    @TempDir
    Path dataDir;

    @Test
    void inProcess() throws Exception {
        createListAndPin(server -> SandboxClient.inProcess(server.inProcessName()));
    }

    @Test
    void overTcp() throws Exception {
        createListAndPin(
                server -> SandboxClient.connect("localhost:" + server.port().orElseThrow()));
    }

    private void createListAndPin(Function<ComputeServer, SandboxClient> connect) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client = connect.apply(server)) {
            Dataset capitals = client.datasets().upload("capitals", ROWS);
            List<DeployedFunction> deployed = client.functions().deploy(Capitals.class);
            DeployedFunction task = named(deployed, "capital");
            DeployedFunction scorer = named(deployed, "capitalMatch");
            EvaluationClient evaluations = client.evaluations();

            EvaluationSuite release = evaluations.createSuite("Release");
            assertThat(release.name()).isEqualTo("Release");
            assertThat(evaluations.suites()).containsExactly(release);

            // background deployments are waited for, and pinned by version
            Evaluation pinned = evaluations.create(
                    "Capitals",
                    "capitals",
                    task,
                    List.of(
                            Scorers.exactMatch().with("case_insensitive", true).inputs("output", "expected"),
                            scorer,
                            Scorers.levenshtein()),
                    release.id(),
                    Map.of("owner", "geo-team", "threshold", 0.9, "tags", List.of("smoke")));
            FunctionVersion taskVersion = task.await();
            FunctionVersion scorerVersion = scorer.await();
            assertThat(pinned.name()).isEqualTo("Capitals");
            assertThat(pinned.datasetId()).isEqualTo(capitals.id());
            assertThat(pinned.datasetRevisionId()).isEqualTo(capitals.revisionId());
            assertThat(pinned.taskFunctionVersionId()).isEqualTo(taskVersion.id());
            assertThat(pinned.suiteId()).contains(release.id());
            assertThat(pinned.metadata())
                    .isEqualTo(Map.of("owner", "geo-team", "threshold", 0.9, "tags", List.of("smoke")));
            assertThat(pinned.scorers())
                    .containsExactly(
                            new EvaluationScorer(
                                    "exact_match",
                                    Optional.of(
                                            "exact_match:{\"case_insensitive\":true,\"inputs\":[\"output\",\"expected\"]}"),
                                    Optional.empty()),
                            new EvaluationScorer("capitalMatch", Optional.empty(), Optional.of(scorerVersion.id())),
                            new EvaluationScorer("levenshtein", Optional.of("levenshtein"), Optional.empty()));

            // by name, as a remote function and as a version: the same versions; a revision pins that revision
            Dataset second = client.datasets().upload("capitals", ROWS.subList(0, 2));
            Evaluation byName = evaluations.create(
                    "Capitals by name",
                    capitals.latest().orElseThrow(),
                    "capital",
                    List.of(RemoteFunction.fromName(client, "capitalMatch"), scorerVersion, Scorers.exactMatch()));
            assertThat(byName.taskFunctionVersionId()).isEqualTo(taskVersion.id());
            assertThat(byName.datasetRevisionId())
                    .as("the revision given, not the newer one")
                    .isEqualTo(capitals.revisionId())
                    .isNotEqualTo(second.revisionId());
            assertThat(byName.scorers())
                    .extracting(EvaluationScorer::id)
                    .containsExactly("capitalMatch", "capitalMatch-2", "exact_match");
            assertThat(byName.scorers().get(1).functionVersionId()).contains(scorerVersion.id());
            assertThat(byName.suiteId()).isEmpty();
            assertThat(byName.metadata()).isEmpty();
            Evaluation latest = evaluations.create(
                    "Capitals latest", second, RemoteFunction.fromName(client, "capital"), List.of("capitalMatch"));
            assertThat(latest.datasetRevisionId()).isEqualTo(second.revisionId());

            // reading them back
            assertThat(evaluations.get(pinned.id()).scorers()).isEqualTo(pinned.scorers());
            assertThat(evaluations.list())
                    .extracting(Evaluation::name)
                    .containsExactly("Capitals", "Capitals by name", "Capitals latest");
            assertThat(evaluations.list(release.id()))
                    .extracting(Evaluation::id)
                    .containsExactly(pinned.id());

            // what a user gets wrong
            assertThatThrownBy(() -> evaluations.create(
                            "Wrong task", "capitals", named(deployed, "population"), List.of(Scorers.exactMatch())))
                    .isInstanceOf(InvalidRequestException.class)
                    .hasMessageContaining("parameter 'city'")
                    // the columns in the dataset's schema order, which a CSV's upload does not fix
                    .hasMessageMatching(
                            "(?s).*the dataset's columns are \\[(country, expected|expected, country)\\].*");
            assertThatThrownBy(() -> evaluations.create(
                            "Wrong input",
                            "capitals",
                            task,
                            List.of(Scorers.exactMatch().inputs("output", "answer"))))
                    .isInstanceOf(InvalidRequestException.class)
                    .hasMessageContaining("reads column 'answer'");
            assertThatThrownBy(() -> evaluations.create("No scorers", "capitals", task, List.of()))
                    .isInstanceOf(InvalidRequestException.class)
                    .hasMessageContaining("at least one scorer");
            assertThatThrownBy(() -> evaluations.create(
                            "Judge",
                            "capitals",
                            task,
                            // a prompt function cannot go to the workers that run a judge given as a scorer
                            List.of(Scorers.llmJudge(Grade.class, "gpt-5", "Grade it.")
                                    .prompt(row -> "Grade " + row.get("output")))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("@ChalkScorer");
            assertThatThrownBy(() -> evaluations.create("Typo", "capitals", task, List.of(42)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("scorers[0] is a java.lang.Integer; give a DeployedFunction, RemoteFunction,"
                            + " FunctionVersion or a function's name, or a built-in from Scorers");
            assertThatThrownBy(() -> evaluations.create(
                            "Elsewhere", "capitals", task, List.of(Scorers.exactMatch()), "evs-missing", Map.of()))
                    .isInstanceOf(EvaluationNotFoundException.class)
                    .hasMessageContaining("no evaluation suite");
            assertThatThrownBy(() -> evaluations.get("eval-missing")).isInstanceOf(EvaluationNotFoundException.class);
        }
    }

    /** A judge's grade: judges run in the user's code, not as a server-side scorer. */
    record Grade(double score, String reason) {}

    static DeployedFunction named(List<DeployedFunction> deployed, String name) {
        return deployed.stream().filter(d -> d.name().equals(name)).findFirst().orElseThrow();
    }
}
