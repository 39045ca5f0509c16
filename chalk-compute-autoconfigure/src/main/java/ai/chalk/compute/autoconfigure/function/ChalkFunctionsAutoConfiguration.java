package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.ChalkComputeChannel;
import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.sandbox.SandboxClient;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.ClassUtils;

/**
 * The application's {@code @ChalkFunction}, {@code @ChalkScorer} and {@code @ChalkClass} beans: discovered once all
 * singletons exist ({@link ChalkFunctions}), then deployed in the background to the server the application's
 * {@link SandboxClient} talks to ({@link ChalkFunctionsDeployment}), unless the application runs as a worker.
 * Switch everything off with {@code chalk.compute.functions.enabled=false}, deployment alone with
 * {@code chalk.compute.functions.deploy=false}; {@code chalk.compute.functions.deploy-only=true} deploys, prints a
 * summary and exits ({@link ChalkFunctionsDeployOnly}). A deployment that could not reach the server is retried
 * with backoff ({@code chalk.compute.functions.retry.*}). Define a {@link FunctionRegistry} bean to use your own Arrow
 * mapping (custom types).
 */
@AutoConfiguration(after = ChalkComputeAutoConfiguration.class)
@ConditionalOnBooleanProperty(name = "chalk.compute.functions.enabled", matchIfMissing = true)
@EnableConfigurationProperties(ChalkComputeProperties.class)
public final class ChalkFunctionsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    FunctionRegistry chalkComputeFunctionRegistry() {
        return new FunctionRegistry();
    }

    @Bean
    @ConditionalOnMissingBean
    ChalkFunctions chalkFunctions(FunctionRegistry registry, ChalkComputeProperties properties) {
        // a function replica makes only the beans of the functions it serves: those are the functions it has
        return new ChalkFunctions(registry, properties.getFunctions().isWorker());
    }

    /** Deployment, when there is a server to deploy to and the application is not itself a worker. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnBean(SandboxClient.class)
    @ConditionalOnBooleanProperty(name = "chalk.compute.functions.deploy", matchIfMissing = true)
    @ConditionalOnProperty(name = "chalk.compute.functions.worker", havingValue = "false", matchIfMissing = true)
    static class DeploymentConfiguration {

        @Bean
        @ConditionalOnMissingBean
        FunctionDeployer chalkComputeFunctionDeployer(SandboxClient client) {
            return FunctionDeployer.of(client);
        }

        @Bean
        @ConditionalOnMissingBean
        ChalkFunctionsDeployment chalkFunctionsDeployment(
                ChalkFunctions functions,
                FunctionDeployer deployer,
                ChalkComputeProperties properties,
                ObjectProvider<ProgressDisplay> progress,
                ObjectProvider<ChalkComputeChannel> channel,
                ConfigurableListableBeanFactory beanFactory) {
            ChalkComputeProperties.Functions settings = properties.getFunctions();
            return new ChalkFunctionsDeployment(
                    functions,
                    deployer,
                    () -> CodeSnapshot.ofClassPath(codeClasses(functions, beanFactory)),
                    () -> applicationClass(beanFactory),
                    progress.getIfAvailable(ProgressDisplay::fromEnv),
                    settings.isWaitOnStartup(),
                    settings.getWaitTimeout(),
                    settings.getDeployConcurrency(),
                    settings.getRetry().isEnabled()
                            ? new RetryBackoff(
                                    settings.getRetry().getInitialBackoff(),
                                    settings.getRetry().getMaxBackoff())
                            : null,
                    () -> channel.ifAvailable(ChalkComputeChannel::reconnectNow));
        }

        @Bean
        @ConditionalOnMissingBean
        @ConditionalOnBooleanProperty("chalk.compute.functions.deploy-only")
        ChalkFunctionsDeployOnly chalkFunctionsDeployOnly(
                ChalkFunctionsDeployment deployment, ChalkFunctions functions, ChalkComputeProperties properties) {
            return new ChalkFunctionsDeployOnly(
                    deployment, functions, properties.getFunctions().getWaitTimeout(), System.err, System::exit);
        }

        /**
         * Where the functions' code is: the application class, the functions' beans and declaring classes. The code
         * snapshot keeps the class path entries holding them, and leaves out what only tests need (a
         * {@code @SpringBootTest}'s JUnit, AssertJ and Mockito, and its test classes unless the functions are there).
         */
        private static List<Class<?>> codeClasses(
                ChalkFunctions functions, ConfigurableListableBeanFactory beanFactory) {
            List<Class<?>> classes = new ArrayList<>();
            applicationClass(beanFactory).ifPresent(classes::add);
            for (FunctionDefinition definition : functions.registry().definitions()) {
                classes.add(definition.method().getDeclaringClass());
            }
            for (FunctionDeploymentState state : functions.functions()) {
                Class<?> bean = beanFactory.getType(state.beanName(), false);
                if (bean != null) {
                    classes.add(ClassUtils.getUserClass(bean));
                }
            }
            return classes;
        }

        /**
         * The {@code @SpringBootApplication} class workers boot: the context's one {@code @SpringBootConfiguration}.
         * Taken from the context rather than from how the JVM started, so it is the same under {@code java -jar}
         * (whose main class is Boot's launcher, the jar's {@code Start-Class} then being called) as from an IDE,
         * and right when the class with {@code main} is not the configuration it runs.
         */
        private static Optional<Class<?>> applicationClass(ConfigurableListableBeanFactory beanFactory) {
            return Arrays.stream(beanFactory.getBeanNamesForAnnotation(SpringBootConfiguration.class))
                    .map(name -> beanFactory.getType(name, false))
                    .filter(java.util.Objects::nonNull)
                    .<Class<?>>map(ClassUtils::getUserClass)
                    .findFirst();
        }
    }
}
