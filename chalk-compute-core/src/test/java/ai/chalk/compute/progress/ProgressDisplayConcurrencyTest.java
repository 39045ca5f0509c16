package ai.chalk.compute.progress;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** Several groups open at once: every step line follows its own group's heading. */
class ProgressDisplayConcurrencyTest {

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final ProgressDisplay display = ProgressDisplay.of(
            ProgressSettings.fromEnv(Map.of()).withTerminal(false), new PrintStream(bytes, true, UTF_8));

    @Test
    void interleavedGroupsRepeatTheirHeading() {
        ProgressGroup a = display.open("Function \"a\"");
        ProgressGroup b = display.open("Function \"b\"");
        a.step("Registering function");
        a.completed("Function registered");
        b.step("Registering function");
        a.step("Waiting for readiness");
        a.step("Waiting for readiness"); // unchanged: neither printed nor a reason to repeat a heading
        b.completed("Function registered");
        b.step("Waiting for readiness");
        a.succeed("Ready");
        b.step("Pending ready=0 available=0");
        b.fail("Unavailable ready=0 available=0 — image pull failed");

        assertThat(bytes.toByteArray()).isEqualTo("""
                Function "a"
                  │ › Registering function
                  │ ✓ Function registered
                Function "b"
                  │ › Registering function
                Function "a" (continued)
                  │ › Waiting for readiness
                Function "b" (continued)
                  │ ✓ Function registered
                  │ › Waiting for readiness
                Function "a" (continued)
                  └ ✓ Ready
                Function "b" (continued)
                  │ › Pending ready=0 available=0
                  └ ✗ Unavailable ready=0 available=0 — image pull failed
                """.getBytes(UTF_8));
    }

    @Test
    void continuedHeadingIsColoredLikeTheHeading() {
        ByteArrayOutputStream colored = new ByteArrayOutputStream();
        ProgressDisplay terminal = ProgressDisplay.of(
                ProgressSettings.fromEnv(Map.of()).withTerminal(true), new PrintStream(colored, true, UTF_8));
        ProgressGroup a = terminal.open("Sandbox \"a\"");
        ProgressGroup b = terminal.open("Sandbox \"b\"");
        a.step("Starting");
        b.step("Starting");
        a.succeed("Running");

        String esc = "\u001B";
        assertThat(colored.toString(UTF_8))
                .isEqualTo(""
                        + esc + "[1mSandbox \"a\"" + esc + "[0m\n"
                        + "  " + esc + "[2m│" + esc + "[0m " + esc + "[36m›" + esc + "[0m Starting\n"
                        + esc + "[1mSandbox \"b\"" + esc + "[0m\n"
                        + "  " + esc + "[2m│" + esc + "[0m " + esc + "[36m›" + esc + "[0m Starting\n"
                        + esc + "[1mSandbox \"a\"" + esc + "[0m" + esc + "[2m (continued)" + esc + "[0m\n"
                        + "  " + esc + "[2m└" + esc + "[0m " + esc + "[32m✓" + esc + "[0m Running\n");
    }

    @Test
    void twoThreadsKeepEveryStepUnderItsOwnHeading() throws Exception {
        int steps = 2_000;
        int window = 100;
        // both threads run freely inside each window of 100 steps and meet between windows, so
        // both groups print inside every window: their lines must interleave at least 19 times
        CyclicBarrier windows = new CyclicBarrier(2);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        Logger logger = (Logger) LoggerFactory.getLogger(ProgressDisplay.class);
        Level level = logger.getLevel();
        logger.setLevel(Level.WARN); // 4000 INFO lines would only clutter the build output
        try {
            List<Future<?>> done = new ArrayList<>();
            for (String name : List.of("a", "b")) {
                done.add(threads.submit(() -> {
                    ProgressGroup group = display.open("Function \"" + name + "\"");
                    for (int i = 0; i < steps; i++) {
                        if (i % window == 0) {
                            windows.await(10, TimeUnit.SECONDS);
                        }
                        group.step(name + " poll " + i);
                        group.step(name + " poll " + i); // a repeat is never printed
                    }
                    group.succeed(name + " ready");
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
            logger.setLevel(level);
        }

        String current = null;
        Map<String, Integer> nextStep = new HashMap<>(Map.of("a", 0, "b", 0));
        Map<String, Integer> headings = new HashMap<>(Map.of("a", 0, "b", 0));
        List<String> lines = bytes.toString(UTF_8).lines().toList();
        assertThat(bytes.toString(UTF_8)).endsWith("\n");
        for (String line : lines) {
            if (line.startsWith("Function \"")) {
                String name = line.substring("Function \"".length(), line.indexOf('"', "Function \"".length()));
                String expected = "Function \"" + name + "\"" + (headings.get(name) == 0 ? "" : " (continued)");
                assertThat(line).isEqualTo(expected);
                assertThat(name)
                        .as("a heading is only repeated when another group printed")
                        .isNotEqualTo(current);
                headings.merge(name, 1, Integer::sum);
                current = name;
            } else if (line.startsWith("  │ › ")) {
                String text = line.substring("  │ › ".length());
                String name = text.substring(0, 1);
                assertThat(name).as("step '%s' follows its own heading", text).isEqualTo(current);
                assertThat(text).isEqualTo(name + " poll " + nextStep.get(name));
                nextStep.merge(name, 1, Integer::sum);
            } else {
                assertThat(line).matches("  └ ✓ [ab] ready");
                assertThat(line.substring("  └ ✓ ".length(), "  └ ✓ ".length() + 1))
                        .isEqualTo(current);
            }
        }
        assertThat(nextStep).containsEntry("a", steps).containsEntry("b", steps);
        assertThat(lines).filteredOn(l -> l.startsWith("  └")).hasSize(2);
        assertThat(lines).filteredOn(l -> l.endsWith(" (continued)")).hasSizeGreaterThanOrEqualTo(steps / window - 1);
    }
}
