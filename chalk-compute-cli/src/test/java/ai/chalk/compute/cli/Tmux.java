package ai.chalk.compute.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A terminal a test types into and reads, as a person at it would: a tmux server of the test's own (its own socket),
 * one window of a fixed size running a plain shell, keys sent with {@code send-keys}, the screen read with
 * {@code capture-pane}.
 */
final class Tmux implements AutoCloseable {

    private final String socket = "chalk-cli-test-" + UUID.randomUUID();

    private Tmux() {}

    /** A tmux server with one 100x30 window running {@code sh} with {@code env}, in {@code dir}. */
    static Tmux start(Map<String, String> env, java.nio.file.Path dir) throws IOException, InterruptedException {
        requireTmux();
        Tmux tmux = new Tmux();
        List<String> args = new ArrayList<>(List.of("new-session", "-d", "-s", "cli", "-x", "100", "-y", "30"));
        args.addAll(List.of("-c", dir.toString()));
        env.forEach((k, v) -> args.addAll(List.of("-e", k + "=" + v)));
        // a plain prompt ("$ ") whatever the machine's shell profile says
        args.addAll(List.of("env", "PS1=$ ", "sh"));
        tmux.tmux(args.toArray(String[]::new));
        return tmux;
    }

    /** tmux is what these tests type through: missing, they fail and say how to install it. */
    static void requireTmux() throws InterruptedException {
        int status;
        try {
            Process p =
                    new ProcessBuilder("tmux", "-V").redirectErrorStream(true).start();
            status = p.waitFor(10, TimeUnit.SECONDS) ? p.exitValue() : -1;
        } catch (IOException e) {
            status = -1;
        }
        assertThat(status)
                .as("tmux drives the command line in these tests: install it (apt-get install -y tmux; .ci/run does)")
                .isZero();
    }

    /** Types {@code keys}: text as is, or tmux key names such as {@code Enter}, {@code C-c}, {@code C-d}, {@code Up}. */
    void send(String... keys) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>(List.of("send-keys", "-t", "cli"));
        args.addAll(List.of(keys));
        tmux(args.toArray(String[]::new));
    }

    /** Types a line of text literally (no key names in it) and Enter. */
    void line(String text) throws IOException, InterruptedException {
        // tmux reads an argument ending in ';' as the end of its command: escaped, it is typed
        tmux("send-keys", "-t", "cli", "-l", text.endsWith(";") ? text.substring(0, text.length() - 1) + "\\;" : text);
        tmux("send-keys", "-t", "cli", "Enter");
    }

    /**
     * The screen and its scrollback, wrapped lines joined and each line's trailing blanks trimmed (a prompt
     * {@code ">>> "} reads {@code ">>>"}).
     */
    String screen() throws IOException, InterruptedException {
        return tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "cli")
                .lines()
                .map(String::stripTrailing)
                .collect(java.util.stream.Collectors.joining("\n", "", "\n"));
    }

    /** Waits until the screen satisfies {@code condition}; fails with the screen otherwise. */
    String await(String what, Predicate<String> condition, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        String screen = screen();
        while (!condition.test(screen)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "waited " + timeout.toSeconds() + " s for " + what + "; the screen:\n" + screen);
            }
            Thread.sleep(100);
            screen = screen();
        }
        return screen;
    }

    /** Waits until the screen shows {@code text} {@code times} times in all. */
    String awaitCount(String text, int times) throws Exception {
        return await(
                times + " x '" + text + "'",
                s -> s.split(java.util.regex.Pattern.quote(text), -1).length - 1 >= times,
                Duration.ofSeconds(30));
    }

    /** Waits until the screen shows {@code text}. */
    String await(String text) throws Exception {
        return awaitCount(text, 1);
    }

    void resize(int cols, int rows) throws IOException, InterruptedException {
        tmux("resize-window", "-t", "cli", "-x", String.valueOf(cols), "-y", String.valueOf(rows));
    }

    private String tmux(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("tmux", "-L", socket, "-f", "/dev/null"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("tmux %s: %s", args[0], output).isZero();
        return output;
    }

    @Override
    public void close() throws Exception {
        new ProcessBuilder("tmux", "-L", socket, "kill-server")
                .redirectErrorStream(true)
                .start()
                .waitFor(10, TimeUnit.SECONDS);
    }
}
