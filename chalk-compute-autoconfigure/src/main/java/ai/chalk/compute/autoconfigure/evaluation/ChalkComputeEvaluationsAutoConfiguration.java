package ai.chalk.compute.autoconfigure.evaluation;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsAutoConfiguration;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsDeployment;
import ai.chalk.compute.evaluation.EvaluationClient;
import ai.chalk.compute.evaluation.FunctionLookup;
import ai.chalk.compute.evaluation.Scorer;
import ai.chalk.compute.evaluation.judge.JudgeFunction;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.sandbox.SandboxClient;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * An {@link EvaluationClient} bean talking to the server the application's {@link SandboxClient} talks to, through the
 * same channel (and so the same credentials and interceptors), with runs on its progress display. When the application
 * deploys its own functions, a task or scorer given by name ({@code "price"}, a {@code @ChalkScorer} method's
 * {@code "priceAccuracy"}) waits for that function's background deployment, up to
 * {@code chalk.compute.functions.wait-timeout}, and pins the version deployed. An LLM judge bean
 * ({@code Scorers.llmJudge}, {@code Scorers.jev}) is a scorer by its name ({@code "trace-quality"}) too: deployed as its
 * scorer function when an evaluation names it, its unchanged version reused. Define your own {@code EvaluationClient}
 * bean to replace it.
 */
@AutoConfiguration(after = {ChalkComputeAutoConfiguration.class, ChalkFunctionsAutoConfiguration.class})
@ConditionalOnBean(SandboxClient.class)
@EnableConfigurationProperties(ChalkComputeProperties.class)
public final class ChalkComputeEvaluationsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    EvaluationClient chalkComputeEvaluationClient(
            SandboxClient client,
            ChalkComputeProperties properties,
            ObjectProvider<ChalkFunctions> functions,
            ObjectProvider<ChalkFunctionsDeployment> deployment,
            ObjectProvider<FunctionDeployer> deployer,
            ObjectProvider<Scorer> scorers) {
        EvaluationClient evaluations = EvaluationClient.of(client)
                .withDeploymentTimeout(properties.getFunctions().getWaitTimeout());
        ChalkFunctions own = functions.getIfAvailable();
        FunctionDeployer deploys = deployer.getIfAvailable();
        // without a deployment the application's functions stay undeployed: their names are the server's to resolve
        FunctionLookup lookup = FunctionLookup.NONE;
        if (own != null && deploys != null && deployment.getIfAvailable() != null) {
            lookup = new ApplicationFunctionLookup(own, deploys);
        }
        // the application's LLM judge beans are scorers by name too: deployed as their scorer function when named
        List<Scorer> judges =
                scorers.orderedStream().filter(JudgeFunction::isJudge).toList();
        if (!judges.isEmpty()) {
            lookup = new JudgeBeanLookup(lookup, judges, deploys != null ? deploys : FunctionDeployer.of(client));
        }
        return lookup == FunctionLookup.NONE ? evaluations : evaluations.withFunctionLookup(lookup);
    }
}
