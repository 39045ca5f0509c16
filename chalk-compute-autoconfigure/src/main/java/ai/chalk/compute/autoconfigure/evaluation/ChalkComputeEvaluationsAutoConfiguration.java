package ai.chalk.compute.autoconfigure.evaluation;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsAutoConfiguration;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsDeployment;
import ai.chalk.compute.evaluation.EvaluationClient;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.sandbox.SandboxClient;
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
 * {@code chalk.compute.functions.wait-timeout}, and pins the version deployed. Define your own {@code EvaluationClient}
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
            ObjectProvider<FunctionDeployer> deployer) {
        EvaluationClient evaluations = EvaluationClient.of(client)
                .withDeploymentTimeout(properties.getFunctions().getWaitTimeout());
        ChalkFunctions own = functions.getIfAvailable();
        FunctionDeployer deploys = deployer.getIfAvailable();
        // without a deployment the application's functions stay undeployed: their names are the server's to resolve
        if (own != null && deploys != null && deployment.getIfAvailable() != null) {
            evaluations = evaluations.withFunctionLookup(new ApplicationFunctionLookup(own, deploys));
        }
        return evaluations;
    }
}
