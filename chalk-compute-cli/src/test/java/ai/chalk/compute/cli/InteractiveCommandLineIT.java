package ai.chalk.compute.cli;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.SandboxInfo;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.ClientCredentials;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The REPL and {@code sandbox shell} used as a person would: {@code bin/chalk-compute} on the shaded jar, in a tmux
 * terminal, against a real server (this JVM's, over TCP with authentication on, local runtime), keys typed and the
 * screen read.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class InteractiveCommandLineIT {

    static final Path LAUNCHER = Path.of("bin", "chalk-compute").toAbsolutePath();
    static final Pattern SANDBOX_ID = Pattern.compile("chalk sandbox ([0-9a-f-]{36})");

    ComputeServer server;
    SandboxClient sdk;
    Map<String, String> env;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        Tmux.requireTmux();
        assertThat(LAUNCHER).as("the launcher").isExecutable();
        server = ComputeServer.builder().dataDir(dataDir).port(0).build().start();
        ClientCredentials.Created credential =
                server.authentication().credentials().create("cli", "default");
        env = Map.of(
                "CHALK_API_SERVER", server.grpcUrl().orElseThrow(),
                "CHALK_CLIENT_ID", credential.credential().id(),
                "CHALK_CLIENT_SECRET", credential.secret());
        sdk = SandboxClient.inProcess(server.inProcessName());
    }

    @AfterAll
    void stop() {
        sdk.close();
        server.close();
    }

    private List<String> running() {
        return sdk.list().stream().map(SandboxInfo::id).toList();
    }

    @Test
    void theReplKeepsStateAcrossSnippetsAndCtrlCInterruptsTheSnippetNotTheRepl(@TempDir Path home) throws Exception {
        Path history = home.resolve("history");
        try (Tmux tmux = Tmux.start(env, home)) {
            tmux.line(LAUNCHER + " repl --history-file " + history);
            // no --variant: it asks, and Enter takes the default
            tmux.await("Variant (chalk, jupyter, docker, eval) [chalk]:");
            tmux.send("Enter");
            String ready = tmux.await("\n>>>");
            Matcher id = SANDBOX_ID.matcher(ready);
            assertThat(id.find()).as(ready).isTrue();
            String sandboxId = id.group(1);
            assertThat(running()).contains(sandboxId);

            tmux.line("x = 1 + 1");
            tmux.awaitCount("\n>>>", 2);
            tmux.line("print(x)");
            tmux.await("print(x)\n2\n>>>");
            // a block: Enter continues it, a blank line runs it
            tmux.line("for i in range(3):");
            tmux.await(">>> for i in range(3):\n...");
            tmux.line("    print('row', i * x)");
            tmux.line("");
            tmux.await("row 0\nrow 2\nrow 4\n>>>");
            tmux.line("x * 21");
            tmux.await("x * 21\n42\n>>>");

            tmux.line("import time; time.sleep(60); x = 'not reached'");
            Thread.sleep(1500);
            tmux.send("C-c");
            tmux.await("KeyboardInterrupt");
            tmux.line("1/0");
            tmux.await("ZeroDivisionError: division by zero");
            // still the same interpreter, its state kept
            tmux.line("x");
            tmux.await(">>> x\n2\n>>>");
            // history: Up brings back the last snippet
            tmux.send("Up");
            tmux.send("Enter");
            tmux.await(">>> x\n2\n>>> x\n2\n>>>");

            tmux.send("C-d");
            tmux.await("Closed chalk sandbox " + sandboxId + ".");
            assertThat(running()).doesNotContain(sandboxId);
        }
        assertThat(Files.readString(history)).contains("x = 1 + 1", "print(x)", "x * 21");
        // every snippet typed is there, keys pasted into one too: only its owner reads it
        assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(history)))
                .isEqualTo("rw-------");
    }

    @Test
    void theJavaReplKeepsItsJShellStateWhenCtrlCStopsASnippet(@TempDir Path home) throws Exception {
        try (Tmux tmux = Tmux.start(env, home)) {
            tmux.line(LAUNCHER + " repl --variant chalk --language java --history-file " + home.resolve("history"));
            Matcher id = SANDBOX_ID.matcher(tmux.await("\njshell>"));
            assertThat(id.find()).isTrue();
            String sandboxId = id.group(1);
            tmux.line("int x = 21;");
            // the first snippet starts JShell in the sandbox: the sandbox's JDK compiles the driver first
            tmux.await("the first snippet's end", s -> s.split("\njshell>", -1).length > 2, Duration.ofSeconds(90));
            int round = 0;
            for (String snippet : List.of("Thread.sleep(60000);", "while (true) {}")) {
                round++;
                tmux.line(snippet);
                Thread.sleep(2000);
                tmux.send("C-c");
                tmux.awaitCount("Interrupted", round);
                // past the grace period after which a snippet that did not stop has its JShell killed
                Thread.sleep(4000);
                tmux.line("x * 2");
                tmux.awaitCount("x * 2\n42\njshell>", round);
            }
            assertThat(tmux.screen()).doesNotContain("state is lost", "fresh JShell state");
            tmux.send("C-d");
            tmux.await("Closed chalk sandbox " + sandboxId + ".");
        }
    }

    @Test
    void aReplWhoseTerminalIsClosedStillTerminatesItsSandbox(@TempDir Path home) throws Exception {
        String sandboxId;
        try (Tmux tmux = Tmux.start(env, home)) {
            tmux.line("exec " + LAUNCHER + " repl --variant chalk --history-file " + home.resolve("history"));
            Matcher id = SANDBOX_ID.matcher(tmux.await("\n>>>"));
            assertThat(id.find()).isTrue();
            sandboxId = id.group(1);
            assertThat(running()).contains(sandboxId);
        } // the tmux server is killed: the REPL gets SIGHUP
        String gone = sandboxId;
        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(20))
                .untilAsserted(() -> assertThat(running()).doesNotContain(gone));
    }

    @Test
    void sandboxShellIsAnInteractiveTerminalThatFollowsResizes(@TempDir Path home) throws Exception {
        try (Tmux tmux = Tmux.start(env, home)) {
            tmux.line("id=$(" + LAUNCHER + " sandbox create --name shell-test) && echo created $id");
            String screen = tmux.await(
                    "the new sandbox's id",
                    s -> Pattern.compile("created [0-9a-f-]{36}\n").matcher(s).find(),
                    Duration.ofSeconds(30));
            Matcher created = Pattern.compile("created ([0-9a-f-]{36})\n").matcher(screen);
            assertThat(created.find()).isTrue();
            String sandboxId = created.group(1);

            tmux.line(LAUNCHER + " sandbox shell $id");
            tmux.await("/workspace#");
            tmux.line("echo hello-$((6 * 7)); stty size");
            tmux.await("hello-42\n30 100\n");
            tmux.resize(120, 40);
            tmux.line("stty size");
            tmux.await("40 120\n");
            // a terminal of the sandbox's own: tty names it (the host's /dev/pts/N does not exist in the sandbox)
            tmux.line("tty | sed 's/^/is-/'");
            tmux.await("is-/dev/pts/");
            // Ctrl-C goes to the sandbox's shell, which stops its command and carries on
            tmux.line("sleep 60");
            Thread.sleep(1000);
            tmux.send("C-c");
            tmux.line("echo after-interrupt");
            tmux.await("\nafter-interrupt\n");
            tmux.line("exit 5");
            tmux.await("\nexit\n$");
            tmux.line("echo status=$?");
            tmux.await("status=5");
            assertThat(running()).contains(sandboxId);

            tmux.line(LAUNCHER + " sandbox terminate $id");
            tmux.await("terminated " + sandboxId);
            assertThat(running()).doesNotContain(sandboxId);
        }
    }
}
