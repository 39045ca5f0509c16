package ai.chalk.compute.server.python;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.artifactstore.v1.Artifact;
import ai.chalk.compute.proto.artifactstore.v1.ArtifactKind;
import ai.chalk.compute.proto.artifactstore.v1.ArtifactProducer;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.PythonExecutionCompleted;
import ai.chalk.compute.proto.sandbox.v1.PythonExecutionOutcome;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.server.RunningServer;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code SandboxRuntimeService/ExecutePython} over TCP through the generated stubs, against real sandboxes of the
 * local runtime and the sandbox's python3: state across calls, streaming, interrupt, timeout, sys.exit, the
 * outcomes, charts, rich results, the artifact limit, and a snippet attacking the server through its output.
 */
class ExecutePythonTest extends RunningServer.PerTestClass {

    private static final Duration WAIT = Duration.ofSeconds(60);
    /**
     * What hostile code does to reach the driver's protocol: the one writable pipe that is neither its stdout nor its
     * stderr. Leaves it in {@code fd}.
     */
    private static final String FIND_PROTOCOL = "import os, stat, struct\n"
            + "def protocol():\n"
            + "    mine = {os.fstat(1).st_ino, os.fstat(2).st_ino}\n"
            + "    for name in os.listdir('/proc/self/fd'):\n"
            + "        try:\n"
            + "            st = os.fstat(int(name))\n"
            + "            flags = open('/proc/self/fdinfo/' + name).read().split('flags:')[1].split()[0]\n"
            + "        except OSError:\n"
            + "            continue\n"
            + "        if stat.S_ISFIFO(st.st_mode) and st.st_ino not in mine and int(flags, 8) & 3 == os.O_WRONLY:\n"
            + "            return int(name)\n"
            + "fd = protocol()\n";

    private String sandbox;

    @BeforeEach
    void sandbox() {
        sandbox = server.sandboxes()
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .putAllEnv(sandboxEnv())
                        .build())
                .getSandbox()
                .getId();
    }

    /** The sandboxes' environment: none here, so the driver uses IPython when the image has it. */
    Map<String, String> sandboxEnv() {
        return Map.of();
    }

    private PythonRun run(String source) throws Exception {
        return PythonRun.start(server.channel, PythonRun.spec(sandbox, source).build())
                .await(WAIT);
    }

    private static PythonExecutionOutcome outcome(PythonRun run) {
        return run.completed().getOutcome();
    }

    @Test
    void stateLivesFromOneSnippetToTheNextAndTheLastExpressionIsTheResult() throws Exception {
        PythonRun first = run("x = 1 + 1");
        assertThat(outcome(first)).isEqualTo(PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_SUCCEEDED);
        assertThat(first.events.get(0).response().getStarted().getExecutionId()).isNotEmpty();
        assertThat(first.resultText()).isNull();

        PythonRun second = run("print(x)");
        assertThat(second.stdout()).isEqualTo("2\n");
        assertThat(second.completed().getExitCode()).isZero();

        PythonRun third = run("x = 10\nx * 2");
        assertThat(third.resultText()).isEqualTo("20");
        assertThat(third.stdout()).isEmpty();
    }

    @Test
    void outputStreamsAsItIsWrittenInOrderFromPrintsWritesAndChildProcesses() throws Exception {
        PythonRun run = run("import os, sys, subprocess, time\n"
                + "for i in range(3):\n"
                + "    print('step', i)\n"
                + "    time.sleep(0.4)\n"
                + "os.write(1, b'raw\\n')\n"
                + "subprocess.run(['echo', 'child'])\n"
                + "print('to stderr', file=sys.stderr)\n");
        assertThat(run.stdout()).isEqualTo("step 0\nstep 1\nstep 2\nraw\nchild\n");
        assertThat(run.stderr()).isEqualTo("to stderr\n");
        long firstOutput = run.events.stream()
                .filter(t -> t.response().hasOutput())
                .findFirst()
                .orElseThrow()
                .nanos();
        long completed = run.events.get(run.events.size() - 1).nanos();
        // step 0 came while the snippet still slept through steps 1 and 2
        assertThat(Duration.ofNanos(completed - firstOutput)).isGreaterThan(Duration.ofMillis(700));
    }

    @Test
    void anInterruptRaisesKeyboardInterruptInTheSnippetAndTheStateStays() throws Exception {
        run("kept = 'still here'");
        PythonRun sleeping = PythonRun.start(
                        server.channel,
                        PythonRun.spec(sandbox, "import time\nprint('sleeping', flush=True)\ntime.sleep(60)")
                                .build(),
                        false,
                        PythonRun::interrupt)
                .await(Duration.ofSeconds(20));
        assertThat(outcome(sleeping)).isEqualTo(PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_INTERRUPTED);
        assertThat(sleeping.completed().getErrorMessage()).contains("KeyboardInterrupt");
        Artifact error = error(sleeping);
        assertThat(error.getInline().getData().toStringUtf8()).contains("\"ename\":\"KeyboardInterrupt\"");
        assertThat(run("kept").resultText()).isEqualTo("'still here'");
    }

    @Test
    void aTimeoutStopsTheSnippetAndKeepsTheState() throws Exception {
        run("before = 41");
        long t0 = System.nanoTime();
        PythonRun slow = PythonRun.start(
                        server.channel,
                        PythonRun.spec(sandbox, "import time\ntime.sleep(30)")
                                .setTimeoutSecs(1)
                                .build())
                .await(WAIT);
        assertThat(outcome(slow)).isEqualTo(PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_TIMED_OUT);
        assertThat(slow.completed().getErrorMessage()).startsWith("timed out after 1s");
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(10));
        assertThat(run("before + 1").resultText()).isEqualTo("42");
    }

    @Test
    void aSnippetThatIgnoresTheInterruptHasItsInterpreterKilledAndTheNextCallStartsFresh() throws Exception {
        run("lost = 1");
        PythonRun stubborn = PythonRun.start(
                        server.channel,
                        PythonRun.spec(
                                        sandbox,
                                        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                                + "time.sleep(60)")
                                .setTimeoutSecs(1)
                                .build())
                .await(WAIT);
        assertThat(outcome(stubborn)).isEqualTo(PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_TIMED_OUT);
        assertThat(stubborn.completed().getErrorMessage())
                .contains("did not stop within 3s")
                .contains("next call starts a fresh interpreter");
        PythonRun after = run("print('lost' in globals())");
        assertThat(after.stdout()).isEqualTo("False\n");
    }

    @Test
    void aDriverThatStopsReadingCommandsStillTimesTheNextOneOut() throws Exception {
        // the snippet replaces the driver's reading of commands; the next command, larger than the pipe holds, is
        // never read: its write blocked before the timeout started
        run("import gc, time\n"
                + "for f in gc.get_objects():\n"
                + "    if getattr(f, '__name__', None) == 'read_exactly' and hasattr(f, '__globals__'):\n"
                + "        f.__globals__['read_exactly'] = lambda fd, n: time.sleep(1e9)\n");
        long t0 = System.nanoTime();
        PythonRun large = PythonRun.start(
                        server.channel,
                        PythonRun.spec(sandbox, "x = 1\n" + "#".repeat(1 << 18))
                                .setTimeoutSecs(2)
                                .build())
                .await(WAIT);
        assertThat(outcome(large)).isEqualTo(PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_TIMED_OUT);
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(20));
        assertThat(run("1 + 1").resultText()).isEqualTo("2"); // a fresh interpreter
    }

    @Test
    void sysExitEndsWithItsCodeAndTheNextCallStartsAFreshInterpreter() throws Exception {
        run("z = 1");
        PythonRun exit = run("import sys\nprint('bye')\nsys.exit(3)");
        assertThat(exit.stdout()).isEqualTo("bye\n");
        assertThat(exit.completed().getExitCode()).isEqualTo(3);
        assertThat(outcome(exit)).isEqualTo(PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_FAILED);
        assertThat(exit.completed().getErrorMessage()).contains("SystemExit: 3");
        assertThat(error(exit)).isNull();

        PythonRun fresh = run("z");
        assertThat(outcome(fresh)).isEqualTo(PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_FAILED);
        assertThat(fresh.completed().getErrorMessage()).endsWith("NameError: name 'z' is not defined\n");
        assertThat(run("1 + 1").resultText()).isEqualTo("2");

        // an interpreter that ended gives back the pipe of its output, which no one reads after its last frame (the
        // server holds the read end, not the JDK, which closed it as the process ended)
        long before = openDescriptors();
        for (int i = 0; i < 20; i++) {
            assertThat(run("import sys\nsys.exit(1)").completed().getExitCode()).isEqualTo(1);
        }
        assertThat(openDescriptors() - before).isLessThan(10);
    }

    private static long openDescriptors() throws java.io.IOException {
        try (var fds = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    @Test
    void anExceptionFailsTheSnippetWithItsNameValueAndTraceback() throws Exception {
        PythonRun failed = run("def f():\n    return 1 / 0\nf()");
        PythonExecutionCompleted c = failed.completed();
        assertThat(c.getOutcome()).isEqualTo(PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_FAILED);
        assertThat(c.getExitCode()).isZero();
        assertThat(c.getErrorMessage())
                .startsWith("Traceback (most recent call last):")
                .contains("line 2, in f")
                .doesNotContain("driver")
                .endsWith("ZeroDivisionError: division by zero\n");
        Artifact error = error(failed);
        assertThat(error.getProducer()).isEqualTo(ArtifactProducer.ARTIFACT_PRODUCER_SYSTEM);
        assertThat(error.getInline().getData().toStringUtf8())
                .contains("\"ename\":\"ZeroDivisionError\"", "\"evalue\":\"division by zero\"");

        PythonRun syntax = run("def broken(:");
        assertThat(syntax.completed().getErrorMessage()).contains("SyntaxError");
    }

    @Test
    void chartsAreCapturedAsPngArtifactsWhenAsked() throws Exception {
        String plot = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')\n";
        PythonRun charted = PythonRun.start(
                        server.channel,
                        PythonRun.spec(sandbox, plot).setCaptureCharts(true).build())
                .await(WAIT);
        assertThat(charted.stderr()).isEmpty();
        List<Artifact> charts = charted.artifacts().stream()
                .filter(a -> a.getKind() == ArtifactKind.ARTIFACT_KIND_CHART
                        && a.getContentType().equals("image/png"))
                .toList();
        assertThat(charts).hasSize(1);
        Artifact png = charts.get(0);
        assertThat(png.getInline().getData().substring(1, 4).toStringUtf8()).isEqualTo("PNG");
        assertThat(png.getImage().getWidth()).isEqualTo(640);
        assertThat(png.getImage().getHeight()).isEqualTo(480);
        assertThat(png.getOrigin().getSandboxExec().getSandboxId()).isEqualTo(sandbox);

        PythonRun plain = run(plot);
        assertThat(plain.artifacts()).noneMatch(a -> a.getKind() == ArtifactKind.ARTIFACT_KIND_CHART);
    }

    @Test
    void richDisplayDataComesAsOneArtifactPerRepresentation() throws Exception {
        PythonRun shown = run("class Table:\n"
                + "    def _repr_html_(self): return '<table><tr><td>1</td></tr></table>'\n"
                + "    def _repr_json_(self): return {'rows': 1}\n"
                + "    def __repr__(self): return 'Table(1)'\n"
                + "display(Table())\n"
                + "Table()");
        List<Artifact> artifacts = shown.artifacts();
        // two bundles (displayed, then the value), each with the three representations in the shell's order
        assertThat(artifacts).hasSize(6);
        for (List<Artifact> bundle : List.of(artifacts.subList(0, 3), artifacts.subList(3, 6))) {
            assertThat(bundle)
                    .extracting(Artifact::getContentType)
                    .containsExactlyInAnyOrder("text/html", "application/json", "text/plain");
            assertThat(bundle)
                    .extracting(a -> a.getMetadata().getFieldsOrThrow("bundle").getNumberValue())
                    .containsOnly(bundle.get(0)
                            .getMetadata()
                            .getFieldsOrThrow("bundle")
                            .getNumberValue());
        }
        assertThat(artifacts.subList(0, 3))
                .allSatisfy(a -> assertThat(
                                a.getMetadata().getFieldsOrThrow("display").getStringValue())
                        .isEqualTo("display_data"));
        assertThat(artifacts)
                .filteredOn(a -> a.getContentType().equals("text/html"))
                .allSatisfy(a -> assertThat(a.getKind()).isEqualTo(ArtifactKind.ARTIFACT_KIND_HTML));
        assertThat(artifacts)
                .filteredOn(a -> a.getContentType().equals("application/json"))
                .allSatisfy(
                        a -> assertThat(a.getInline().getData().toStringUtf8()).isEqualTo("{\"rows\": 1}"));
        assertThat(shown.resultText()).isEqualTo("Table(1)");
    }

    @Test
    void artifactsOverTheLimitAreSkippedAndReported() throws Exception {
        PythonRun limited = PythonRun.start(
                        server.channel,
                        PythonRun.spec(
                                        sandbox,
                                        "class Big:\n    def _repr_html_(self): return 'x' * 5000\n"
                                                + "    def __repr__(self): return 'Big'\nBig()")
                                .setMaxArtifactBytes(1000)
                                .build())
                .await(WAIT);
        assertThat(limited.resultText()).isEqualTo("Big");
        assertThat(limited.completed().getSkippedArtifactsList())
                .singleElement()
                .satisfies(s -> {
                    assertThat(s.getName()).isEqualTo("result.html");
                    assertThat(s.getByteSize()).isEqualTo(5000);
                    assertThat(s.getReason()).contains("max_artifact_bytes (1000)");
                });
    }

    @Test
    void aHugeFakeArtifactOnTheProtocolIsReadPastNotHeldAndTheServerKeepsServing() throws Exception {
        // the snippet writes straight onto the driver's protocol: an artifact frame claiming 3 GiB, then 64 MiB of it
        PythonRun hostile = PythonRun.start(
                        server.channel,
                        PythonRun.spec(
                                        sandbox,
                                        FIND_PROTOCOL
                                                + "import json\n"
                                                + "h = json.dumps({'name': 'fake', 'mime': 'image/png',"
                                                + " 'role': 'display_data', 'bundle': 1}).encode()\n"
                                                + "os.write(fd, b'A' + struct.pack('>I', 3 << 30) + struct.pack('>I',"
                                                + " len(h)) + h)\n"
                                                + "chunk = b'\\0' * (1 << 20)\n"
                                                + "for _ in range(64): os.write(fd, chunk)\n")
                                .setTimeoutSecs(5)
                                .build())
                .await(WAIT);
        PythonExecutionCompleted c = hostile.completed();
        assertThat(c.getOutcome()).isEqualTo(PythonExecutionOutcome.PYTHON_EXECUTION_OUTCOME_FAILED);
        assertThat(c.getErrorMessage()).contains("broke the driver protocol", "next call starts a fresh interpreter");
        assertThat(hostile.artifacts()).isEmpty();
        assertThat(run("6 * 7").resultText()).isEqualTo("42");
    }

    @Test
    void malformedFramesFromTheSandboxEndTheInterpreterNotTheServer() throws Exception {
        for (String forged : List.of(
                "b'Z' + struct.pack('>I', 4) + b'oops'", // an unknown frame type
                "b'O' + struct.pack('>I', 0x7fffffff)", // output larger than any the driver sends
                "b'C' + struct.pack('>I', 7) + b'{broken'", // a report that is not JSON
                "b'X' + struct.pack('>I', 2) + b'[]'")) { // a report that is not an object
            run("survivor = 1");
            PythonRun hostile = run(FIND_PROTOCOL + "os.write(fd, " + forged + ")\n" + "import time\ntime.sleep(1)");
            assertThat(hostile.completed().getErrorMessage()).as(forged).contains("broke the driver protocol");
            assertThat(run("'survivor' in globals()").resultText()).isEqualTo("False");
        }
    }

    @Test
    void aSnippetFloodingOutputToAClientThatDoesNotReadIsHeldBackNotBuffered() throws Exception {
        // the client takes one message and then nothing: the snippet must block on its writes, the server hold little
        PythonRun flood = PythonRun.start(
                server.channel,
                PythonRun.spec(
                                sandbox,
                                "import sys\nline = 'x' * 1023 + '\\n'\nn = 0\nwhile True:\n"
                                        + "    sys.stdout.write(line * 1024)\n    n += 1\n"
                                        + "    open('/tmp/flood', 'w').write(str(n))\n")
                        .build(),
                true,
                r -> {});
        Thread.sleep(4000);
        int written = Integer.parseInt(server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(sandbox)
                        .setCommand("cat")
                        .addArgs("/tmp/flood")
                        .build())
                .getStdout()
                .toStringUtf8());
        // MiB written in 4 s by a loop that could write gigabytes: what pipes and flow-control windows hold
        assertThat(written).isLessThan(32);
        flood.requests.cancel("test done", null);
        assertThat(flood.end.get(10, java.util.concurrent.TimeUnit.SECONDS))
                .satisfies(t -> assertThat(Status.fromThrowable(t).getCode()).isEqualTo(Status.Code.CANCELLED));
        // the client went away: its snippet was interrupted, and the interpreter serves the next call
        assertThat(run("n > 0").resultText()).isEqualTo("True");
    }

    @Test
    void badRequestsGetActionableStatuses() throws Exception {
        Throwable empty = PythonRun.start(
                        server.channel, PythonRun.spec("", "1").build())
                .end
                .get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(Status.fromThrowable(empty).getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        Throwable unknown = PythonRun.start(
                        server.channel, PythonRun.spec("no-such-sandbox", "1").build())
                .end
                .get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(Status.fromThrowable(unknown).getCode()).isEqualTo(Status.Code.NOT_FOUND);
        Throwable relative = PythonRun.start(
                        server.channel,
                        PythonRun.spec(sandbox, "1").setWorkdir("tmp").build())
                .end
                .get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(Status.fromThrowable(relative).getDescription()).contains("absolute path");
        PythonRun missingDir = PythonRun.start(
                        server.channel,
                        PythonRun.spec(sandbox, "1").setWorkdir("/no/such/dir").build())
                .await(WAIT);
        assertThat(missingDir.completed().getErrorMessage()).contains("FileNotFoundError");
        PythonRun withEnv = PythonRun.start(
                        server.channel,
                        PythonRun.spec(sandbox, "import os\nos.environ['GREETING'] + ' ' + os.getcwd()")
                                .putEnv("GREETING", "hi")
                                .setWorkdir("/tmp")
                                .build())
                .await(WAIT);
        assertThat(withEnv.resultText()).isEqualTo("'hi /tmp'");
        assertThat(run("import os\n'GREETING' in os.environ").resultText()).isEqualTo("False");
    }

    private static Artifact error(PythonRun run) {
        return run.artifacts().stream()
                .filter(a -> a.getContentType().equals(PythonArtifacts.ERROR_TYPE))
                .findFirst()
                .orElse(null);
    }
}
