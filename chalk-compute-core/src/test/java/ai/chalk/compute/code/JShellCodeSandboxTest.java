package ai.chalk.compute.code;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Language#JAVA}: one JShell state inside a real sandbox, on the JDK the sandbox sees, with the same result
 * shape as Python: state, output, values, exceptions, compile errors, System.exit, interrupt and timeout.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class JShellCodeSandboxTest {

    ComputeServer server;
    SandboxClient client;
    CodeSandbox sandbox;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).build().start();
        client = SandboxClient.inProcess(server.inProcessName());
        sandbox = CodeSandbox.create(
                client, SandboxConfig.builder().language(Language.JAVA).build());
    }

    @AfterAll
    void stop() {
        sandbox.close();
        client.close();
        server.close();
    }

    @Test
    void stateOutputAndValuesCarryOver() {
        ExecutionResult declared = sandbox.runCode("int x = 1 + 1;");
        assertThat(declared.success()).isTrue();
        List<OutputMessage> lines = new CopyOnWriteArrayList<>();
        ExecutionResult printed = sandbox.runCode(
                "System.out.println(x);\nSystem.err.println(\"careful\");",
                RunOptions.defaults().onStdout(lines::add));
        assertThat(printed.stdout()).isEqualTo("2\n");
        assertThat(printed.stderr()).isEqualTo("careful\n");
        assertThat(lines).extracting(OutputMessage::line).containsExactly("2");
        ExecutionResult value =
                sandbox.runCode("String greet(String n) { return \"hi \" + n; }\ngreet(\"x\") + x * 20");
        assertThat(value.text()).isEqualTo("\"hi x40\"");
    }

    @Test
    void exceptionsAndCompileErrorsAreCodeErrorsAndTheStateStays() {
        sandbox.runCode("var list = new java.util.ArrayList<String>(); list.add(\"a\");");
        ExecutionResult thrown = sandbox.runCode("int y = 1 / 0;");
        assertThat(thrown.executionOk()).isTrue();
        assertThat(thrown.codeError()).hasValueSatisfying(e -> {
            assertThat(e.name()).isEqualTo("java.lang.ArithmeticException");
            assertThat(e.value()).isEqualTo("/ by zero");
            assertThat(e.traceback()).contains("java.lang.ArithmeticException: / by zero");
        });
        ExecutionResult broken = sandbox.runCode("int z = ;");
        assertThat(broken.codeError())
                .hasValueSatisfying(e -> assertThat(e.name()).isEqualTo("CompilationError"));
        assertThat(sandbox.runCode("list.size()").text()).isEqualTo("1");
    }

    @Test
    void systemExitEndsTheStateWithItsCodeAndTheNextSnippetStartsFresh() {
        sandbox.runCode("int before = 5;");
        ExecutionResult exit = sandbox.runCode("System.exit(3);");
        assertThat(exit.executionOk()).isTrue();
        assertThat(exit.exitCode()).hasValue(3);
        assertThat(exit.success()).isFalse();
        ExecutionResult fresh = sandbox.runCode("before");
        assertThat(fresh.codeError()).isPresent();
        assertThat(sandbox.runCode("6 * 7").text()).isEqualTo("42");
    }

    @Test
    void anInterruptStopsTheSnippetAndATimeoutToo() throws Exception {
        sandbox.runCode("int kept = 9;");
        CompletableFuture<ExecutionResult> looping = CompletableFuture.supplyAsync(() -> sandbox.runCode(
                "System.out.println(\"looping\");\nwhile (true) { Thread.sleep(100); }",
                RunOptions.defaults().onStdout(m -> sandbox.interrupt())));
        ExecutionResult interrupted = looping.get(60, TimeUnit.SECONDS);
        assertThat(interrupted.codeError())
                .as(interrupted.toString())
                .hasValueSatisfying(e -> assertThat(e.name()).isEqualTo("Interrupted"));
        assertThat(sandbox.runCode("kept").text()).isEqualTo("9");

        ExecutionResult timedOut = sandbox.runCode(
                "while (true) { Thread.sleep(100); }", RunOptions.defaults().timeout(Duration.ofSeconds(1)));
        assertThat(timedOut.executionOk()).isFalse();
        assertThat(timedOut.executionError())
                .hasValueSatisfying(m -> assertThat(m).startsWith("timed out after 1s"));
        assertThat(sandbox.runCode("kept + 1").text()).isEqualTo("10");
    }

    @Test
    void anInterruptAsTheReplSendsItStopsASleepingSnippetAndKeepsTheState() throws Exception {
        sandbox.runCode("int before = 4;");
        for (String snippet : List.of("Thread.sleep(60000);", "Thread.sleep(60000)", "while (true) {}")) {
            CompletableFuture<ExecutionResult> sleeping = CompletableFuture.supplyAsync(() -> sandbox.runCode(snippet));
            // a person presses Ctrl-C a moment after Enter, with nothing printed
            Thread.sleep(1500);
            sandbox.interrupt();
            ExecutionResult interrupted = sleeping.get(30, TimeUnit.SECONDS);
            assertThat(interrupted.executionOk())
                    .as(snippet + ": " + interrupted)
                    .isTrue();
            assertThat(interrupted.codeError())
                    .as(snippet + ": " + interrupted)
                    .hasValueSatisfying(e -> assertThat(e.name()).isEqualTo("Interrupted"));
            assertThat(sandbox.runCode("before").text()).as(snippet).isEqualTo("4");
        }
    }

    @Test
    void aSnippetWritingOverTheDriversProtocolEndsItsStateNotTheClient() {
        for (String hostile : List.of(
                // a line that is not a message
                "new java.io.PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true)"
                        + ".println(\"GARBAGE here\");",
                // a line longer than any message, without an end
                "var raw = new java.io.FileOutputStream(java.io.FileDescriptor.out);\n"
                        + "for (int i = 0; i < 6; i++) raw.write(new byte[1 << 20]);\nThread.sleep(5000);")) {
            sandbox.runCode("int doomed = 1;");
            ExecutionResult attacked = sandbox.runCode(hostile);
            assertThat(attacked.executionOk()).as(hostile).isFalse();
            assertThat(attacked.executionError())
                    .hasValueSatisfying(m -> assertThat(m).contains("broke the protocol", "fresh JShell state"));
            assertThat(sandbox.runCode("doomed").codeError()).isPresent();
            assertThat(sandbox.runCode("1 + 1").text()).isEqualTo("2");
        }
    }
}
