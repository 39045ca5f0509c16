package ai.chalk.compute.progress;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * What progress shows also reaches SLF4J, once: INFO when a step changes and the display is off, DEBUG while the
 * display shows it (a console with both prints it once) and for an unchanged poll, WARN for a failure.
 */
class ProgressLoggingTest {

    private final Logger logger = (Logger) LoggerFactory.getLogger(ProgressDisplay.class);
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private Level originalLevel;

    @BeforeEach
    void attach() {
        originalLevel = logger.getLevel();
        logger.setLevel(Level.DEBUG);
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void detach() {
        logger.detachAppender(appender);
        logger.setLevel(originalLevel);
    }

    @Test
    void loggerLivesInTheProgressPackage() {
        assertThat(logger.getName()).startsWith("ai.chalk.compute.progress");
    }

    @Test
    void whileTheDisplayShowsTheStepsTheLogHasThemAtDebugOnly() {
        ProgressGroupRun.fraud(ProgressSettings.fromEnv(Map.of()).withTerminal(false));

        assertThat(appender.list)
                .extracting(ILoggingEvent::getLevel, ILoggingEvent::getFormattedMessage)
                .containsExactly(
                        tuple(Level.DEBUG, "Function \"fraud\": Registering function"),
                        tuple(Level.DEBUG, "Function \"fraud\": Function registered"),
                        tuple(Level.DEBUG, "Function \"fraud\": Waiting for readiness"),
                        tuple(Level.DEBUG, "Function \"fraud\": Pending ready=0 available=0"),
                        tuple(Level.DEBUG, "Function \"fraud\": Pending ready=0 available=0"),
                        tuple(
                                Level.DEBUG,
                                "Function \"fraud\": Pending ready=0 available=0 — waiting for startup probe"),
                        tuple(Level.DEBUG, "Function \"fraud\": Ready"));
    }

    @Test
    void lifecycleIsLoggedWhenTheDisplayIsOff() {
        ProgressSettings off = ProgressSettings.fromEnv(Map.of("CHALK_SANDBOX_TUI", "false"));
        assertThat(ProgressGroupRun.fraud(off)).isEmpty();

        assertThat(appender.list)
                .as("each change at INFO, the repeated poll at DEBUG")
                .filteredOn(e -> e.getLevel() == Level.INFO)
                .extracting(ILoggingEvent::getFormattedMessage)
                .containsExactly(
                        "Function \"fraud\": Registering function",
                        "Function \"fraud\": Function registered",
                        "Function \"fraud\": Waiting for readiness",
                        "Function \"fraud\": Pending ready=0 available=0",
                        "Function \"fraud\": Pending ready=0 available=0 — waiting for startup probe",
                        "Function \"fraud\": Ready");
    }

    @Test
    void failureIsAWarning() {
        ProgressDisplay display = ProgressDisplay.of(
                ProgressSettings.fromEnv(Map.of()).withTerminal(false),
                new PrintStream(new ByteArrayOutputStream(), true, UTF_8));
        ProgressGroup group = display.open("Sandbox \"abc\"");
        group.step("Starting");
        group.fail("FAILED_PRECONDITION: image not found");

        assertThat(appender.list)
                .extracting(ILoggingEvent::getLevel, ILoggingEvent::getFormattedMessage)
                .containsExactly(
                        tuple(Level.DEBUG, "Sandbox \"abc\": Starting"),
                        tuple(Level.WARN, "Sandbox \"abc\": FAILED_PRECONDITION: image not found"));
    }

    /** The SDK's example with one repeated poll, returning what was displayed. */
    private static final class ProgressGroupRun {
        static byte[] fraud(ProgressSettings settings) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            ProgressDisplay display = ProgressDisplay.of(settings, new PrintStream(bytes, true, UTF_8));
            ProgressGroup group = display.open("Function \"fraud\"");
            group.step("Registering function");
            group.completed("Function registered");
            group.step("Waiting for readiness");
            group.step("Pending ready=0 available=0");
            group.step("Pending ready=0 available=0");
            group.step("Pending ready=0 available=0 — waiting for startup probe");
            group.succeed("Ready");
            return bytes.toByteArray();
        }
    }
}
