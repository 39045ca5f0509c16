package ai.chalk.compute.progress;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.error.ChalkComputeException;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class BackgroundFailuresTest {

    private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();

    private BackgroundFailures reporter(ProgressSettings settings) {
        return BackgroundFailures.to(new PrintStream(stderr, true, UTF_8), settings);
    }

    @Test
    void aServiceFailureIsExplainedByItsStatusAndMessageWithoutFrames() {
        BackgroundFailures failures =
                reporter(ProgressSettings.fromEnv(Map.of()).withTerminal(false));
        assertThat(failures.hasUnobservedFailures()).isFalse();

        ChalkComputeException failure = ChalkComputeException.from(Status.ALREADY_EXISTS
                .withDescription("function \"fraud\" already exists\nrun: chalk function delete fraud")
                .asRuntimeException());
        failures.report("Deploying function \"fraud\"", failure);

        assertThat(stderr.toString(UTF_8)).isEqualTo("""
                ✗ Unobserved background failure: Deploying function "fraud"
                  ALREADY_EXISTS: function "fraud" already exists
                  run: chalk function delete fraud
                """);
        assertThat(failures.hasUnobservedFailures()).isTrue();
        assertThat(failures.failures()).containsExactly(new BackgroundFailure("Deploying function \"fraud\"", failure));
    }

    @Test
    void anUnexpectedFailureKeepsItsStackTraceAndCauses() {
        BackgroundFailures failures =
                reporter(ProgressSettings.fromEnv(Map.of()).withTerminal(false));
        failures.report(
                "Deploying function \"score\"",
                new IllegalStateException(
                        "cannot encode argument", new UncheckedIOException(new IOException("disk full"))));

        String text = stderr.toString(UTF_8);
        assertThat(text).startsWith("""
                ✗ Unobserved background failure: Deploying function "score"
                  java.lang.IllegalStateException: cannot encode argument
                      at ai.chalk.compute.progress.BackgroundFailuresTest.anUnexpectedFailureKeepsItsStackTraceAndCauses(""");
        assertThat(text)
                .contains("\n  Caused by: java.io.UncheckedIOException: java.io.IOException: disk full\n")
                .contains("\n  Caused by: java.io.IOException: disk full\n")
                .endsWith("\n");
        assertThat(text.lines()).allMatch(line -> line.startsWith("✗ ") || line.startsWith("  "));
    }

    @Test
    void writtenWhateverTheDisplayModeAndLogConfiguration() {
        Logger logger = (Logger) LoggerFactory.getLogger(BackgroundFailures.class);
        Level level = logger.getLevel();
        logger.setLevel(Level.OFF);
        try {
            BackgroundFailures failures = reporter(ProgressSettings.fromEnv(Map.of("CHALK_SANDBOX_TUI", "false")));
            failures.report(
                    "Building image \"python:3.12\"",
                    new ChalkComputeException(Status.Code.INTERNAL, "RUN pip install pandas exited with status 1"));
        } finally {
            logger.setLevel(level);
        }
        assertThat(stderr.toString(UTF_8)).isEqualTo("""
                ✗ Unobserved background failure: Building image "python:3.12"
                  INTERNAL: RUN pip install pandas exited with status 1
                """);
    }

    @Test
    void coloredOnATerminal() {
        BackgroundFailures failures =
                reporter(ProgressSettings.fromEnv(Map.of()).withTerminal(true));
        failures.report(
                "Deploying function \"fraud\"", new ChalkComputeException(Status.Code.UNAVAILABLE, "no server"));
        assertThat(stderr.toString(UTF_8))
                .isEqualTo(
                        "\u001B[31m✗\u001B[0m \u001B[1mUnobserved background failure: Deploying function \"fraud\"\u001B[0m\n"
                                + "  UNAVAILABLE: no server\n");
    }

    @Test
    void progressAfterAReportRepeatsItsHeading() {
        ProgressSettings settings = ProgressSettings.fromEnv(Map.of()).withTerminal(false);
        ProgressOutput shared = ProgressOutput.to(new PrintStream(stderr, true, UTF_8));
        ProgressGroup fraud = new ProgressGroup("Function \"fraud\"", settings, shared);
        BackgroundFailures failures = new BackgroundFailures(shared, settings);

        fraud.step("Waiting for readiness");
        failures.report(
                "Deploying function \"score\"", new ChalkComputeException(Status.Code.UNAVAILABLE, "no server"));
        fraud.succeed("Ready");

        assertThat(stderr.toString(UTF_8)).isEqualTo("""
                Function "fraud"
                  │ › Waiting for readiness
                ✗ Unobserved background failure: Deploying function "score"
                  UNAVAILABLE: no server
                Function "fraud" (continued)
                  └ ✓ Ready
                """);
    }

    @Test
    void alsoLoggedAsAnErrorWithTheException() {
        Logger logger = (Logger) LoggerFactory.getLogger(BackgroundFailures.class);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        try {
            RuntimeException failure = new RuntimeException("boom");
            reporter(ProgressSettings.fromEnv(Map.of()).withTerminal(false))
                    .report("Deploying function \"x\"", failure);
            assertThat(appender.list).singleElement().satisfies(event -> {
                assertThat(event.getLevel()).isEqualTo(Level.ERROR);
                assertThat(event.getFormattedMessage())
                        .isEqualTo("Unobserved background failure: Deploying function \"x\"");
                assertThat(event.getThrowableProxy().getMessage()).isEqualTo("boom");
            });
        } finally {
            logger.detachAppender(appender);
        }
    }
}
