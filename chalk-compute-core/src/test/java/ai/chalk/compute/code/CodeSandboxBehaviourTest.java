package ai.chalk.compute.code;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.files.FileNotFoundInSandboxException;
import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecResult;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * What code_sandboxes documents of every variant, as one suite with the same test code for each variant that runs
 * here (chalk, docker, eval, jupyter): state across calls, {@code print(x)} after {@code x = 1 + 1}, the expression's
 * value as {@code text}, output streamed line by line, the error's name, value and traceback, {@code sys.exit},
 * timeout and interrupt keeping the state, rich results, files, commands, and the snapshot round trip. A subclass says how to make a sandbox.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
abstract class CodeSandboxBehaviourTest {

    CodeSandbox sandbox;

    /** A new sandbox of the variant under test with {@code config}. */
    abstract CodeSandbox create(SandboxConfig config);

    /**
     * One sandbox for the class, as a session would use it (each test names its own variables and files), made once
     * the subclass's {@code @BeforeAll} has started what it needs.
     */
    @BeforeEach
    void createSandbox() {
        if (sandbox != null) {
            return;
        }
        sandbox = create(SandboxConfig.builder().timeout(Duration.ofSeconds(60)).build());
    }

    /** Closes the class's sandbox; a subclass whose {@code @AfterAll} stops a server calls this first. */
    @AfterAll
    void closeSandbox() {
        if (sandbox != null) {
            sandbox.close();
            sandbox = null;
        }
    }

    @Test
    void stateCarriesOverAndTheLastExpressionIsTheText() {
        ExecutionResult assigned = sandbox.runCode("x = 1 + 1");
        assertThat(assigned.success()).isTrue();
        assertThat(assigned.text()).isEmpty();

        ExecutionResult printed = sandbox.runCode("print(x)");
        assertThat(printed.stdout()).isEqualTo("2\n");
        assertThat(printed.text()).isEmpty();

        ExecutionResult value = sandbox.runCode("x * 21");
        assertThat(value.text()).isEqualTo("42");
        assertThat(value.results())
                .singleElement()
                .satisfies(r -> assertThat(r.isMainResult()).isTrue());
    }

    @Test
    void outputComesLineByLineAsItIsWrittenAndStderrApart() {
        List<OutputMessage> lines = new CopyOnWriteArrayList<>();
        ExecutionResult result = sandbox.runCode(
                "import sys, time\nfor i in range(3):\n    print(f'Step {i}', flush=True)\n    time.sleep(0.5)\n"
                        + "print('warn', file=sys.stderr)",
                RunOptions.defaults().onStdout(lines::add).onStderr(lines::add));
        assertThat(lines.stream().filter(m -> !m.error()))
                .extracting(OutputMessage::line)
                .containsExactly("Step 0", "Step 1", "Step 2");
        assertThat(lines.stream().filter(OutputMessage::error))
                .extracting(OutputMessage::line)
                .containsExactly("warn");
        // the first line came while the snippet still slept through the others
        assertThat(Duration.between(lines.get(0).timestamp(), lines.get(2).timestamp()))
                .isGreaterThan(Duration.ofMillis(700));
        assertThat(result.stdout()).isEqualTo("Step 0\nStep 1\nStep 2\n");
        assertThat(result.stderr()).isEqualTo("warn\n");
    }

    @Test
    void anErrorHasItsNameValueAndTraceback() {
        ExecutionResult error = sandbox.runCode("def f():\n    return 1 / 0\nf()");
        assertThat(error.success()).isFalse();
        assertThat(error.executionOk()).isTrue();
        assertThat(error.exitCode()).isEmpty();
        assertThat(error.codeError()).hasValueSatisfying(e -> {
            assertThat(e.name()).isEqualTo("ZeroDivisionError");
            assertThat(e.value()).isEqualTo("division by zero");
            assertThat(e.traceback())
                    .contains("in f")
                    .contains("ZeroDivisionError")
                    .doesNotContain("\u001B[");
        });
        assertThat(sandbox.runCode("'still here'").text()).isEqualTo("'still here'");
    }

    @Test
    void sysExitEndsTheInterpreterWithItsCodeAndTheNextSnippetStartsFresh() {
        sandbox.runCode("kept = 1");
        ExecutionResult exit = sandbox.runCode("import sys\nsys.exit(3)");
        assertThat(exit.executionOk()).isTrue();
        assertThat(exit.exitCode()).hasValue(3);
        assertThat(exit.codeError()).isEmpty();
        assertThat(exit.success()).isFalse();
        ExecutionResult fresh = sandbox.runCode("'kept' in globals()");
        assertThat(fresh.text()).as(fresh.toString()).isEqualTo("False");
    }

    @Test
    void aTimeoutIsAnExecutionErrorAndTheStateStays() {
        sandbox.runCode("stays = 5");
        ExecutionResult timedOut = sandbox.runCode(
                "import time\ntime.sleep(30)", RunOptions.defaults().timeout(Duration.ofSeconds(1)));
        assertThat(timedOut.executionOk()).isFalse();
        assertThat(timedOut.success()).isFalse();
        assertThat(timedOut.executionError())
                .hasValueSatisfying(m -> assertThat(m).startsWith("timed out after 1s"));
        assertThat(sandbox.runCode("stays").text()).isEqualTo("5");
    }

    @Test
    void anInterruptFromAnotherThreadRaisesKeyboardInterruptAndTheStateStays() throws Exception {
        sandbox.runCode("count = 7");
        CompletableFuture<ExecutionResult> sleeping = CompletableFuture.supplyAsync(() -> sandbox.runCode(
                "import time\nprint('sleeping', flush=True)\ntime.sleep(60)",
                RunOptions.defaults().onStdout(m -> sandbox.interrupt())));
        ExecutionResult result = sleeping.get(60, TimeUnit.SECONDS);
        assertThat(result.executionOk()).isTrue();
        assertThat(result.codeError())
                .hasValueSatisfying(e -> assertThat(e.name()).isEqualTo("KeyboardInterrupt"));
        assertThat(sandbox.runCode("count").text()).isEqualTo("7");
    }

    /**
     * A snippet sent the moment the previous one failed runs: a Jupyter kernel asked to stop on error would abort it,
     * with no result, when it arrives before the kernel has finished handling the error.
     */
    @Test
    void aSnippetRightAfterAnErrorRuns() {
        for (int i = 0; i < 20; i++) {
            assertThat(sandbox.runCode("1 / 0").codeError())
                    .hasValueSatisfying(e -> assertThat(e.name()).isEqualTo("ZeroDivisionError"));
            ExecutionResult next = sandbox.runCode("21 * 2");
            assertThat(next.text()).as("attempt %d: %s", i, next).isEqualTo("42");
        }
    }

    @Test
    void displaysAndTheValueComeAsMimeBundles() {
        ExecutionResult shown = sandbox.runCode("class Page:\n"
                + "    def _repr_html_(self): return '<h1>hi</h1>'\n"
                + "    def __repr__(self): return 'Page()'\n"
                + "display(Page())\n"
                + "{'a': 1}");
        assertThat(shown.results()).hasSize(2);
        assertThat(shown.results().get(0).html()).hasValue("<h1>hi</h1>");
        assertThat(shown.results().get(0).text()).hasValue("Page()");
        assertThat(shown.results().get(0).isMainResult()).isFalse();
        assertThat(shown.results().get(1).isMainResult()).isTrue();
        assertThat(shown.text()).isEqualTo("{'a': 1}");
    }

    @Test
    void filesAreWhereTheSnippetsAndCommandsSeeThem() {
        sandbox.files().writeText("notes/test.txt", "Hello World");
        assertThat(sandbox.files().readText("notes/test.txt")).isEqualTo("Hello World");
        assertThat(sandbox.files().list("notes")).singleElement().satisfies(f -> {
            assertThat(f.name()).isEqualTo("test.txt");
            assertThat(f.size()).isEqualTo(11);
            assertThat(f.isFile()).isTrue();
        });
        assertThat(sandbox.runCode("open('notes/test.txt').read()").text()).isEqualTo("'Hello World'");
        assertThat(sandbox.commands().run("cat notes/test.txt").stdoutText()).isEqualTo("Hello World");

        sandbox.runCode("open('notes/made.bin', 'wb').write(bytes(range(256)))");
        assertThat(sandbox.files().readBytes("notes/made.bin")).hasSize(256).startsWith(0, 1, 2);

        // an absolute path is the one the snippets see
        String cwd = sandbox.runCode("__import__('os').getcwd()").text().replace("'", "");
        String absolute = cwd + "/abs-" + UUID.randomUUID() + "/a.txt";
        sandbox.files().writeText(absolute, "anywhere");
        assertThat(sandbox.runCode("open('" + absolute + "').read()").text()).isEqualTo("'anywhere'");
        sandbox.commands().run("rm -r " + absolute.substring(0, absolute.lastIndexOf('/')));

        assertThatThrownBy(() -> sandbox.files().readText("notes/missing.txt"))
                .isInstanceOf(FileNotFoundInSandboxException.class)
                .hasMessageContaining("missing.txt");
    }

    @Test
    void commandsReturnTheirOutputAndExitCodeAndStreamAsTheyRun() {
        ExecResult run = sandbox.commands().run("echo out && echo err >&2 && exit 4");
        assertThat(run.exitCode()).isEqualTo(4);
        assertThat(run.stdoutText()).isEqualTo("out\n");
        assertThat(run.stderrText()).isEqualTo("err\n");

        try (CodeProcess process = sandbox.commands().exec("python3", "-c", "print('hello')")) {
            assertThat(process.lines()).containsExactly("hello");
        }

        try (CodeProcess slow = sandbox.commands().exec("sh", "-c", "echo one; sleep 3; echo two")) {
            long started = System.nanoTime();
            Iterator<ExecEvent> events = slow.iterator();
            ExecEvent first = events.next();
            while (first.stdoutText() == null) {
                first = events.next();
            }
            assertThat(first.stdoutText()).isEqualTo("one\n");
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofMillis(2500));
            ExecResult end = slow.collect();
            assertThat(end.stdoutText()).isEqualTo("two\n");
            assertThat(end.exitCode()).isZero();
        }
    }

    @Test
    void aSnapshotKeepsTheFilesAndTheVariablesForANewSandbox() {
        sandbox.files().writeText("snap/setup.txt", "ready");
        sandbox.runCode("import json as j\n"
                + "rows = [1, 2, 3]\n"
                + "def double(v):\n"
                + "    return 2 * v\n"
                + "handle = open('snap/setup.txt')");
        CodeSnapshot snapshot = sandbox.createSnapshot("My setup");
        try {
            assertThat(snapshot.name()).isEqualTo("My setup");
            assertThat(snapshot.variant()).isEqualTo(sandbox.variant());
            assertThat(snapshot.variables()).contains("j", "rows", "double");
            // an open file cannot be written out: named, not fatal
            assertThat(snapshot.skipped()).contains("handle");
            try (CodeSandbox restored = create(SandboxConfig.builder()
                    .timeout(Duration.ofSeconds(60))
                    .snapshot(snapshot.id())
                    .build())) {
                assertThat(restored.id()).isNotEqualTo(sandbox.id());
                assertThat(restored.files().readText("snap/setup.txt")).isEqualTo("ready");
                assertThat(restored.runCode("j.dumps([double(v) for v in rows])")
                                .text())
                        .isEqualTo("'[2, 4, 6]'");
                assertThat(restored.runCode("'handle' in globals()").text()).isEqualTo("False");
                // a sandbox of its own: what it does from here is not the original's
                restored.runCode("rows.append(4)");
                assertThat(sandbox.runCode("rows").text()).isEqualTo("[1, 2, 3]");
            }
        } finally {
            snapshot.delete();
            sandbox.runCode("handle.close()");
        }
        assertThatThrownBy(() -> create(
                                SandboxConfig.builder().snapshot(snapshot.id()).build())
                        .close())
                .as("a deleted snapshot")
                .isInstanceOf(RuntimeException.class);
    }
}
