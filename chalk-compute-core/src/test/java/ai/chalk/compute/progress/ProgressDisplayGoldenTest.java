package ai.chalk.compute.progress;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** The exact bytes progress writes in each mode. */
class ProgressDisplayGoldenTest {

    private static final String ESC = "\u001B";

    /** The SDK's own example, as shown without colour. */
    static final String PLAIN = """
            Function "fraud"
              │ › Registering function
              │ ✓ Function registered
              │ › Waiting for readiness
              │ › Pending ready=0 available=0
              │ › Pending ready=0 available=0 — waiting for startup probe
              └ ✓ Ready
            """;

    /** The same on an interactive terminal: bold heading, dim guide, cyan ›, green ✓. */
    static final String COLORED = ""
            + ESC + "[1mFunction \"fraud\"" + ESC + "[0m\n"
            + "  " + ESC + "[2m│" + ESC + "[0m " + ESC + "[36m›" + ESC + "[0m Registering function\n"
            + "  " + ESC + "[2m│" + ESC + "[0m " + ESC + "[32m✓" + ESC + "[0m Function registered\n"
            + "  " + ESC + "[2m│" + ESC + "[0m " + ESC + "[36m›" + ESC + "[0m Waiting for readiness\n"
            + "  " + ESC + "[2m│" + ESC + "[0m " + ESC + "[36m›" + ESC + "[0m Pending ready=0 available=0\n"
            + "  " + ESC + "[2m│" + ESC + "[0m " + ESC + "[36m›" + ESC
            + "[0m Pending ready=0 available=0 — waiting for startup probe\n"
            + "  " + ESC + "[2m└" + ESC + "[0m " + ESC + "[32m✓" + ESC + "[0m Ready\n";

    /** A terminal session: TERM set, nothing that turns colour off. */
    private static Map<String, String> terminalEnv(String... more) {
        Map<String, String> env = new HashMap<>(Map.of("TERM", "xterm-256color", "HOME", "/home/dev"));
        for (int i = 0; i < more.length; i += 2) {
            env.put(more[i], more[i + 1]);
        }
        return env;
    }

    /** Runs the SDK's example deployment, polling readiness twice with the same status. */
    static byte[] fraudDeployment(ProgressSettings settings) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProgressDisplay display = ProgressDisplay.of(settings, new PrintStream(bytes, true, UTF_8));
        try (ProgressGroup group = display.open("Function \"fraud\"")) {
            group.step("Registering function");
            group.completed("Function registered");
            group.step("Waiting for readiness");
            group.step("Pending ready=0 available=0");
            group.step("Pending ready=0 available=0");
            group.step("Pending ready=0 available=0 — waiting for startup probe");
            group.step("Pending ready=0 available=0 — waiting for startup probe");
            group.succeed("Ready");
        }
        return bytes.toByteArray();
    }

    @Test
    void interactiveTerminalIsColored() {
        ProgressSettings settings = ProgressSettings.fromEnv(terminalEnv()).withTerminal(true);
        assertThat(settings.colored()).isTrue();
        assertThat(fraudDeployment(settings)).isEqualTo(COLORED.getBytes(UTF_8));
    }

    @Test
    void redirectedOutputIsPlain() {
        ProgressSettings settings = ProgressSettings.fromEnv(terminalEnv()).withTerminal(false);
        assertThat(fraudDeployment(settings)).isEqualTo(PLAIN.getBytes(UTF_8));
    }

    @Test
    void noColorKeepsATerminalPlain() {
        ProgressSettings settings =
                ProgressSettings.fromEnv(terminalEnv("NO_COLOR", "1")).withTerminal(true);
        assertThat(fraudDeployment(settings)).isEqualTo(PLAIN.getBytes(UTF_8));
    }

    @Test
    void dumbTerminalIsPlain() {
        ProgressSettings settings =
                ProgressSettings.fromEnv(terminalEnv("TERM", "dumb")).withTerminal(true);
        assertThat(fraudDeployment(settings)).isEqualTo(PLAIN.getBytes(UTF_8));
    }

    @Test
    void ciIsPlain() {
        ProgressSettings settings =
                ProgressSettings.fromEnv(terminalEnv("CI", "true")).withTerminal(true);
        assertThat(fraudDeployment(settings)).isEqualTo(PLAIN.getBytes(UTF_8));
    }

    @Test
    void tuiOffPrintsNothing() {
        ProgressSettings fromVariable = ProgressSettings.fromEnv(terminalEnv("CHALK_SANDBOX_TUI", "false"))
                .withTerminal(true);
        assertThat(fraudDeployment(fromVariable)).isEmpty();
        ProgressSettings fromProperty = ProgressSettings.fromEnv(terminalEnv())
                .withTerminal(true)
                .overriddenBy(ProgressMode.OFF, ColorMode.AUTO);
        assertThat(fraudDeployment(fromProperty)).isEmpty();
    }

    @Test
    void explicitColorChoiceWinsOverDetection() {
        ProgressSettings redirected =
                ProgressSettings.fromEnv(terminalEnv("NO_COLOR", "1")).withTerminal(false);
        assertThat(fraudDeployment(redirected.overriddenBy(ProgressMode.AUTO, ColorMode.ALWAYS)))
                .isEqualTo(COLORED.getBytes(UTF_8));
        ProgressSettings terminal = ProgressSettings.fromEnv(terminalEnv()).withTerminal(true);
        assertThat(fraudDeployment(terminal.overriddenBy(ProgressMode.AUTO, ColorMode.NEVER)))
                .isEqualTo(PLAIN.getBytes(UTF_8));
    }

    @Test
    void colorNeverChangesTheText() {
        String colored = new String(
                fraudDeployment(ProgressSettings.fromEnv(terminalEnv()).withTerminal(true)), UTF_8);
        assertThat(colored.replaceAll(ESC + "\\[[0-9;]*m", "")).isEqualTo(PLAIN);
    }

    @Test
    void repeatedIdenticalStepIsPrintedOnce() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProgressDisplay display = ProgressDisplay.of(
                ProgressSettings.fromEnv(Map.of()).withTerminal(false), new PrintStream(bytes, true, UTF_8));
        ProgressGroup group = display.open("Sandbox \"abc\"");
        for (int poll = 0; poll < 5; poll++) {
            group.step("Starting");
        }
        group.step("Running");
        group.step("Starting");
        group.succeed("Running");

        assertThat(bytes.toByteArray()).isEqualTo("""
                Sandbox "abc"
                  │ › Starting
                  │ › Running
                  │ › Starting
                  └ ✓ Running
                """.getBytes(UTF_8));
    }

    @Test
    void failureClosesTheGroup() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProgressDisplay display = ProgressDisplay.of(
                ProgressSettings.fromEnv(Map.of()).withTerminal(false), new PrintStream(bytes, true, UTF_8));
        ProgressGroup group = display.open("Image build \"python:3.12\"");
        group.step("Building image");
        group.fail("Build failed: RUN pip install pandas exited with status 1");
        group.step("ignored after the group is closed");
        group.succeed("ignored too");
        group.close();

        assertThat(bytes.toByteArray()).isEqualTo("""
                Image build "python:3.12"
                  │ › Building image
                  └ ✗ Build failed: RUN pip install pandas exited with status 1
                """.getBytes(UTF_8));
        assertThat(group.isFinished()).isTrue();
    }

    @Test
    void failureIsRedOnATerminal() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProgressDisplay display = ProgressDisplay.of(
                ProgressSettings.fromEnv(terminalEnv()).withTerminal(true), new PrintStream(bytes, true, UTF_8));
        ProgressGroup group = display.open("Sandbox \"abc\"");
        group.fail("FAILED_PRECONDITION: image not found");

        assertThat(bytes.toString(UTF_8))
                .isEqualTo(ESC + "[1mSandbox \"abc\"" + ESC + "[0m\n" + "  " + ESC + "[2m└" + ESC + "[0m " + ESC
                        + "[31m✗" + ESC + "[0m FAILED_PRECONDITION: image not found\n");
    }

    @Test
    void closingAnUnfinishedGroupSaysSo() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProgressDisplay display = ProgressDisplay.of(
                ProgressSettings.fromEnv(Map.of()).withTerminal(false), new PrintStream(bytes, true, UTF_8));
        try (ProgressGroup group = display.open("Function \"fraud\"")) {
            group.step("Registering function");
        }
        assertThat(bytes.toString(UTF_8)).isEqualTo("""
                Function "fraud"
                  │ › Registering function
                  └ ✗ Did not finish
                """);
    }

    @Test
    void aReportIsAlwaysOneLineAndNeverMarkup() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProgressDisplay display = ProgressDisplay.of(
                ProgressSettings.fromEnv(Map.of()).withTerminal(false), new PrintStream(bytes, true, UTF_8));
        ProgressGroup group = display.open("Sandbox \"a\nb\"");
        group.step("line one\nline two\r\n");
        group.step("\u001B[2Jcleared?");
        group.succeed("Ready");

        assertThat(bytes.toString(UTF_8)).isEqualTo("""
                Sandbox "a b"
                  │ › line one line two
                  │ › [2Jcleared?
                  └ ✓ Ready
                """);
    }

    @Test
    void stderrWithAnAsciiCharsetStillGetsTheSdksBytes() {
        // stderr of a JDK 17 in a container without a locale is ASCII: marks would become '?'
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProgressOutput asciiStderr = ProgressOutput.to(new PrintStream(bytes, true, US_ASCII), US_ASCII);
        ProgressGroup group = new ProgressGroup(
                "Function \"fraud\"", ProgressSettings.fromEnv(Map.of()).withTerminal(false), asciiStderr);
        group.step("Registering function");
        group.completed("Function registered");
        group.step("Waiting for readiness");
        group.step("Pending ready=0 available=0");
        group.step("Pending ready=0 available=0 — waiting for startup probe");
        group.succeed("Ready");

        assertThat(bytes.toByteArray()).isEqualTo(PLAIN.getBytes(UTF_8));
    }

    @Test
    void defaultTargetIsStderrNeverStdout() {
        PrintStream originalErr = System.err;
        PrintStream originalOut = System.out;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Logger progressLog = (Logger) LoggerFactory.getLogger(ProgressDisplay.class);
        Level level = progressLog.getLevel();
        progressLog.setLevel(Level.OFF); // the test's log configuration writes to System.err too
        try {
            System.setErr(new PrintStream(err, true, UTF_8));
            System.setOut(new PrintStream(out, true, UTF_8));
            ProgressDisplay display =
                    ProgressDisplay.of(ProgressSettings.fromEnv(Map.of()).withTerminal(false));
            ProgressGroup group = display.open("Sandbox \"abc\"");
            group.step("Starting");
            group.succeed("Running");
        } finally {
            System.setErr(originalErr);
            System.setOut(originalOut);
            progressLog.setLevel(level);
        }
        assertThat(err.toString(UTF_8)).isEqualTo("""
                Sandbox "abc"
                  │ › Starting
                  └ ✓ Running
                """);
        assertThat(out.toByteArray()).isEmpty();
    }
}
