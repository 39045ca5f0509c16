package ai.chalk.compute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Logger;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** {@link ChalkCompute#configureLogging(String)} with Logback, the binding of this module's tests. */
class ConfigureLoggingTest {

    private final Logger sdk = (Logger) LoggerFactory.getLogger(ChalkCompute.LOGGER_NAME);

    @AfterEach
    void restore() {
        sdk.detachAndStopAllAppenders();
        sdk.setAdditive(true);
        sdk.setLevel(null);
    }

    @Test
    void theSdksRecordsFromTheLevelUpGoToStderrOnceEvenWhenConfiguredTwice() {
        String written = capturingStderr(() -> {
            assertThat(ChalkCompute.configureLogging("DEBUG")).isEqualTo(ChalkCompute.LoggingBackend.LOGBACK);
            assertThat(ChalkCompute.configureLogging()).isEqualTo(ChalkCompute.LoggingBackend.LOGBACK);
            org.slf4j.Logger deployer = LoggerFactory.getLogger("ai.chalk.compute.function.deploy.FunctionDeployer");
            deployer.debug("every poll");
            deployer.info("sum: deployed version 1");
            LoggerFactory.getLogger("com.acme.App").info("the application's own");
        });
        assertThat(written)
                .isEqualTo("INFO ai.chalk.compute.function.deploy.FunctionDeployer: sum: deployed version 1"
                        + System.lineSeparator());
        assertThat(sdk.isAdditive()).as("not passed to the root logger as well").isFalse();

        String warnings = capturingStderr(() -> {
            ChalkCompute.configureLogging("warning");
            LoggerFactory.getLogger("ai.chalk.compute.x").info("quiet");
            LoggerFactory.getLogger("ai.chalk.compute.x").warn("loud");
        });
        assertThat(warnings).isEqualTo("WARN ai.chalk.compute.x: loud" + System.lineSeparator());
    }

    @Test
    void anUnknownLevelIsRefusedNamingTheKnownOnes() {
        assertThatThrownBy(() -> ChalkCompute.configureLogging("LOUD"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown log level \"LOUD\": use TRACE, DEBUG, INFO, WARN or ERROR");
    }

    private static String capturingStderr(Runnable action) {
        PrintStream original = System.err;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        try {
            action.run();
        } finally {
            System.setErr(original);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
