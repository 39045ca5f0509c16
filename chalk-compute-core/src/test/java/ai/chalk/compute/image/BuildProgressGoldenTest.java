package ai.chalk.compute.image;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressSettings;
import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesResponse;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The exact lines an image build shows in the progress display, from the updates a server streams. */
class BuildProgressGoldenTest {

    private static final String ESC = "\u001B";

    static StreamCustomImageBuildUpdatesResponse line(String message) {
        return StreamCustomImageBuildUpdatesResponse.newBuilder()
                .setStatus("building")
                .setMessage(message)
                .build();
    }

    static String show(boolean terminal, StreamCustomImageBuildUpdatesResponse... updates) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProgressSettings settings = ProgressSettings.fromEnv(
                        Map.of("CHALK_SANDBOX_TUI", "true", "TERM", "xterm-256color"))
                .withTerminal(terminal);
        try (BuildProgress progress = new BuildProgress(
                ProgressDisplay.of(settings, new PrintStream(bytes, true, UTF_8)), "python:3.12-slim")) {
            for (StreamCustomImageBuildUpdatesResponse u : updates) {
                progress.update(u);
            }
        }
        return bytes.toString(UTF_8);
    }

    @Test
    void aSuccessfulBuild() {
        assertThat(show(
                        false,
                        line("Step 1/2 : FROM python:3.12-slim"),
                        line("Step 2/2 : RUN pip install pandas"),
                        line("Collecting pandas"),
                        line(""),
                        line("Collecting pandas"),
                        line("Successfully tagged chalk-compute/custom:0123456789abcdef0123456789abcdef"),
                        StreamCustomImageBuildUpdatesResponse.newBuilder()
                                .setStatus("succeeded")
                                .setImage("chalk-compute/custom:0123456789abcdef0123456789abcdef")
                                .build()))
                .isEqualTo("""
                        Image build "python:3.12-slim"
                          │ › Step 1/2 : FROM python:3.12-slim
                          │ › Step 2/2 : RUN pip install pandas
                          │ › Collecting pandas
                          │ › Successfully tagged chalk-compute/custom:0123456789abcdef0123456789abcdef
                          └ ✓ Built chalk-compute/custom:0123456789abcdef0123456789abcdef
                        """);
    }

    @Test
    void aFailedBuildShowsTheFirstLineOfItsError() {
        assertThat(show(
                        false,
                        line("Step 2/2 : RUN false"),
                        StreamCustomImageBuildUpdatesResponse.newBuilder()
                                .setStatus("failed")
                                .setError(
                                        "steps[0] (run_commands[0]: false) failed: The command '/bin/sh -c false' returned a non-zero"
                                                + " code: 1\nLast output:\nnothing")
                                .build()))
                .isEqualTo("""
                        Image build "python:3.12-slim"
                          │ › Step 2/2 : RUN false
                          └ ✗ Failed: steps[0] (run_commands[0]: false) failed: The command '/bin/sh -c false'\
                         returned a non-zero code: 1
                        """);
    }

    @Test
    void onATerminalTheMarksAreColoured() {
        assertThat(show(
                        true,
                        line("Step 1/1 : FROM python:3.12-slim"),
                        StreamCustomImageBuildUpdatesResponse.newBuilder()
                                .setStatus("succeeded")
                                .setImage("img")
                                .build()))
                .isEqualTo(ESC + "[1mImage build \"python:3.12-slim\"" + ESC + "[0m\n"
                        + "  " + ESC + "[2m│" + ESC + "[0m " + ESC + "[36m›" + ESC
                        + "[0m Step 1/1 : FROM python:3.12-slim\n"
                        + "  " + ESC + "[2m└" + ESC + "[0m " + ESC + "[32m✓" + ESC + "[0m Built img\n");
    }

    @Test
    void aStreamThatEndsWithoutAnOutcomeClosesAsNotFinished() {
        assertThat(show(false, line("Step 1/3 : FROM python:3.12-slim"))).isEqualTo("""
                Image build "python:3.12-slim"
                  │ › Step 1/3 : FROM python:3.12-slim
                  └ ✗ Did not finish
                """);
    }
}
