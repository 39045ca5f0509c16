package ai.chalk.compute.function;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.sandbox.spi.CommandLine;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Values that carry environment variables, an API key as often as not, show their names only when turned into text:
 * one {@code log.debug("{}", options)} printed every value.
 */
class SecretValuesNotInTextTest {

    private static final Map<String, String> ENV = Map.of("OPENAI_API_KEY", "sk-not-to-be-shown");

    @Test
    void deploymentOptionsAndCommandLinesNameTheirVariablesOnly() {
        DeploymentOptions d = DeploymentOptions.DEFAULTS;
        String options = new DeploymentOptions(
                        d.image(),
                        d.cpu(),
                        d.memory(),
                        ENV,
                        d.secrets(),
                        d.minReplicas(),
                        d.maxReplicas(),
                        d.network(),
                        d.credentials(),
                        d.gpu())
                .toString();
        String command = new CommandLine("sh", List.of("-c", "true"), ENV, null).toString();
        for (String text : List.of(options, command)) {
            assertThat(text).contains("OPENAI_API_KEY").doesNotContain("sk-not-to-be-shown");
        }
    }
}
