package ai.chalk.compute.autoconfigure.function;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState.Status;
import ai.chalk.compute.autoconfigure.progress.ChalkComputeProgressAutoConfiguration;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import com.acme.classpath.ClassPathApp;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The code a function deployed from a test runs: the application's, without the test's frameworks (this test's
 * JUnit, AssertJ and Mockito are on its class path, as in any {@code @SpringBootTest}).
 */
class FunctionCodeTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    EmbeddedComputeServerAutoConfiguration.class,
                    ChalkComputeProgressAutoConfiguration.class,
                    ChalkFunctionsAutoConfiguration.class))
            .withPropertyValues("chalk.compute.tui=false", "chalk.compute.functions.wait-on-startup=true");

    @Test
    void aFunctionDeployedFromATestRunsWithoutTheTestFrameworks() {
        runner.withUserConfiguration(ClassPathApp.class).run(context -> {
            FunctionDeploymentState state =
                    context.getBean(ChalkFunctions.class).function("loadable").orElseThrow();
            assertThat(state.status()).as(String.valueOf(state.error())).isEqualTo(Status.DEPLOYED);
            RemoteFunction loadable = RemoteFunction.fromName(context.getBean(SandboxClient.class), "loadable");
            // the test's own class path has them all
            assertThat(loadable.call(ClassPathApp.class.getName())).isEqualTo(true);
            assertThat(loadable.call("org.springframework.boot.SpringApplication"))
                    .isEqualTo(true);
            for (String testOnly : new String[] {
                "org.junit.jupiter.api.Test",
                "org.assertj.core.api.Assertions",
                "org.mockito.Mockito",
                "org.springframework.boot.test.context.runner.ApplicationContextRunner",
                "org.awaitility.Awaitility",
            }) {
                assertThat(Class.forName(testOnly))
                        .as("on this test's class path")
                        .isNotNull();
                assertThat(loadable.call(testOnly))
                        .as("%s in the replica", testOnly)
                        .isEqualTo(false);
            }
        });
    }
}
