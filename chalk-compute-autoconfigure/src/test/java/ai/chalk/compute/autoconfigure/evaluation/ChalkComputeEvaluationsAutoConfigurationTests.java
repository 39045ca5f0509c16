package ai.chalk.compute.autoconfigure.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.dataset.ChalkComputeDatasetsAutoConfiguration;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsAutoConfiguration;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState.Status;
import ai.chalk.compute.autoconfigure.progress.ChalkComputeProgressAutoConfiguration;
import ai.chalk.compute.dataset.DatasetClient;
import ai.chalk.compute.evaluation.Evaluation;
import ai.chalk.compute.evaluation.EvaluationClient;
import ai.chalk.compute.evaluation.EvaluationRun;
import ai.chalk.compute.evaluation.EvaluationRunStatus;
import ai.chalk.compute.evaluation.EvaluationScorer;
import ai.chalk.compute.evaluation.EvaluationSuite;
import ai.chalk.compute.evaluation.ScoreSummary;
import ai.chalk.compute.evaluation.Scorers;
import ai.chalk.compute.evaluation.judge.JudgeField;
import ai.chalk.compute.evaluation.judge.LlmJudge;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.sandbox.SandboxClient;
import com.acme.functions.WorkerApp;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@link EvaluationClient} bean against the real embedded server: the application's own function and
 * {@code @ChalkScorer} given by name wait for their background deployment and are pinned by the version deployed; the
 * run scores its rows with them and a built-in. Replaceable, and absent without a sandbox client.
 */
class ChalkComputeEvaluationsAutoConfigurationTests {

    @TempDir
    Path tmp;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    EmbeddedComputeServerAutoConfiguration.class,
                    ChalkComputeProgressAutoConfiguration.class,
                    ChalkFunctionsAutoConfiguration.class,
                    ChalkComputeDatasetsAutoConfiguration.class,
                    ChalkComputeEvaluationsAutoConfiguration.class))
            .withPropertyValues("chalk.compute.tui=false");

    @Test
    void theApplicationsFunctionAndScorerByNameArePinnedOnceDeployedAndRunEndToEnd() {
        // no wait-on-startup: the functions are still deploying in the background when the evaluation is created
        runner.withUserConfiguration(WorkerApp.class)
                .withPropertyValues("chalk.compute.embedded.data-dir=" + tmp.resolve("data"))
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(EvaluationClient.class);
                    EvaluationClient evaluations = context.getBean(EvaluationClient.class);
                    context.getBean(DatasetClient.class)
                            .upload(
                                    "greetings",
                                    List.of(
                                            Map.of("name", "Ada", "expected", "Welcome, Ada"),
                                            Map.of("name", "Bob", "expected", "Hi, Bob")));
                    EvaluationSuite suite = evaluations.createSuite("Release");

                    Evaluation evaluation = evaluations.create(
                            "Greetings",
                            "greetings",
                            "greet",
                            List.of("exact", Scorers.levenshtein()),
                            suite.id(),
                            Map.of());

                    ChalkFunctions functions = context.getBean(ChalkFunctions.class);
                    assertThat(functions.function("greet").orElseThrow().status())
                            .isEqualTo(Status.DEPLOYED);
                    assertThat(functions.function("exact").orElseThrow().status())
                            .isEqualTo(Status.DEPLOYED);
                    FunctionDeployer deployer = context.getBean(FunctionDeployer.class);
                    assertThat(evaluation.taskFunctionVersionId())
                            .isEqualTo(deployer.current("greet").id());
                    assertThat(evaluation.scorers())
                            .extracting(EvaluationScorer::id)
                            .containsExactly("exact", "levenshtein");
                    assertThat(evaluation.scorers().get(0).functionVersionId())
                            .contains(deployer.current("exact").id());
                    assertThat(evaluations.list(suite.id()))
                            .extracting(Evaluation::id)
                            .containsExactly(evaluation.id());

                    EvaluationRun run = evaluation.run().await(Duration.ofMinutes(4));
                    assertThat(run.status()).as(run.toString()).isEqualTo(EvaluationRunStatus.SUCCEEDED);
                    ScoreSummary summary = run.scoreSummary().orElseThrow();
                    // "Welcome, Ada" matches; "Welcome, Bob" against "Hi, Bob": 0, and 1 - 7 edits / 12 characters
                    assertThat(summary.scorer("exact").averageScore().getAsDouble())
                            .isCloseTo(0.5, within(1e-9));
                    assertThat(summary.scorer("levenshtein").averageScore().getAsDouble())
                            .isCloseTo((1 + (1 - 7.0 / 12)) / 2, within(1e-9));
                    assertThat(run.resultDataset().orElseThrow().rows()).isEqualTo(2);
                });
    }

    @Test
    void anLlmJudgeBeanIsAScorerByNameDeployedAsItsScorerFunction() {
        runner.withUserConfiguration(WorkerApp.class, Judges.class)
                .withPropertyValues("chalk.compute.embedded.data-dir=" + tmp.resolve("data"))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    EvaluationClient evaluations = context.getBean(EvaluationClient.class);
                    context.getBean(DatasetClient.class)
                            .upload("greetings", List.of(Map.of("name", "Ada", "expected", "Welcome, Ada")));

                    Evaluation evaluation =
                            evaluations.create("Greetings", "greetings", "greet", List.of("greeting-grade"));

                    FunctionDeployer deployer = context.getBean(FunctionDeployer.class);
                    String judgeVersion = deployer.current("greeting-grade").id();
                    assertThat(evaluation.scorers()).singleElement().satisfies(scorer -> {
                        assertThat(scorer.id()).isEqualTo("greeting-grade");
                        assertThat(scorer.functionVersionId()).contains(judgeVersion);
                    });
                    // named again, the unchanged judge keeps its version
                    Evaluation again =
                            evaluations.create("Greetings 2", "greetings", "greet", List.of("greeting-grade"));
                    assertThat(again.scorers().get(0).functionVersionId()).contains(judgeVersion);
                    assertThat(deployer.versions("greeting-grade")).hasSize(1);
                });
    }

    /** A grade a judge fills in. */
    record GreetingGrade(
            @JudgeField(min = 0, max = 1, description = "Is it a welcome?")
            double score,

            String reason) {}

    @Configuration(proxyBeanMethods = false)
    static class Judges {
        @Bean
        LlmJudge<GreetingGrade> greetingGrade() {
            return Scorers.llmJudge(GreetingGrade.class, "gpt-5", "Grade the greeting.");
        }
    }

    @Test
    void aUserDefinedEvaluationClientReplacesTheAutoConfiguredOne() {
        runner.withPropertyValues("chalk.compute.embedded.data-dir=" + tmp.resolve("data"))
                .withUserConfiguration(OwnClient.class)
                .run(context -> assertThat(context.getBean(EvaluationClient.class))
                        .isSameAs(context.getBean("ownEvaluations")));
    }

    @Test
    void withoutASandboxClientThereIsNoEvaluationClient() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(ChalkComputeEvaluationsAutoConfiguration.class))
                .run(context -> assertThat(context).doesNotHaveBean(EvaluationClient.class));
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnClient {
        @Bean
        EvaluationClient ownEvaluations(SandboxClient client) {
            return EvaluationClient.of(client.channel());
        }
    }
}
