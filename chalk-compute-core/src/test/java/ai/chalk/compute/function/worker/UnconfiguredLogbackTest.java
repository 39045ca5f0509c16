package ai.chalk.compute.function.worker;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** A worker's Logback without a configuration logs at INFO; a configuration of the code's own stands. */
class UnconfiguredLogbackTest {

    @Test
    void logbackWithoutAConfigurationLogsAtInfoAndAConfigurationOfTheCodesOwnStands() throws Exception {
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        Level before = root.getLevel();
        try (URLClassLoader noConfiguration = new URLClassLoader(new URL[0], null)) {
            root.setLevel(Level.DEBUG); // what Logback sets when it finds no configuration
            assertThat(UnconfiguredLogback.quietDefaults(noConfiguration)).isTrue();
            assertThat(root.getLevel()).isEqualTo(Level.INFO);
            assertThat(LoggerFactory.getLogger("com.acme.Tally").isDebugEnabled())
                    .isFalse();

            root.setLevel(Level.DEBUG);
            // this class path has a logback-test.xml
            assertThat(UnconfiguredLogback.quietDefaults(getClass().getClassLoader()))
                    .isFalse();
            assertThat(root.getLevel()).isEqualTo(Level.DEBUG);
        } finally {
            root.setLevel(before);
        }
    }
}
