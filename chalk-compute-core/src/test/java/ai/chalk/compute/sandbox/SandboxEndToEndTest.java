package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.error.InvalidRequestException;
import ai.chalk.compute.error.SandboxNotFoundException;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.LocalRuntimeOptions;
import ai.chalk.compute.server.runtime.local.LocalIsolation;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client against a real {@link ComputeServer} running real processes; one server per test
 * class. Subclasses choose the transport (in-process or TCP).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("alone")
abstract class SandboxEndToEndTest {

    private static final long HUNDRED_MB = 100L * 1024 * 1024;
    /** {@code yes} prints this and a newline, over and over. */
    private static final String YES_LINE = "chalk-compute 0123456789 abcdefghijklmnopqrstuvwxyz";

    ComputeServer server;
    SandboxClient client;
    Sandbox sandbox;

    /** Opens the client under test for the running server. */
    abstract SandboxClient connect(ComputeServer server);

    @BeforeAll
    void startServer(@TempDir Path dataDir) throws Exception {
        ComputeServer.Builder builder = ComputeServer.builder().dataDir(dataDir).port(0);
        // -Dchalk.compute.test.isolation=NONE|AUTO|REQUIRED overrides the server's default isolation
        String isolation = System.getProperty("chalk.compute.test.isolation");
        if (isolation != null && !isolation.isBlank()) {
            builder.runtime(LocalRuntimeOptions.builder()
                    .isolation(LocalIsolation.valueOf(isolation.trim().toUpperCase(java.util.Locale.ROOT)))
                    .build());
        }
        server = builder.build().start();
        client = connect(server);
        sandbox = client.create();
    }

    @AfterAll
    void stopServer() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    // ---- exec ----

    @Test
    void execCollectsOutputAndExitCode() {
        ExecResult result = sandbox.exec("echo", "hello", "world");
        assertThat(result.stdout()).containsExactly("hello world");
        assertThat(result.stdoutText()).isEqualTo("hello world\n");
        assertThat(result.stderr()).isEmpty();
        assertThat(result.exitCode()).isZero();
        assertThat(result.signal()).isEmpty();
        assertThat(result.success()).isTrue();
    }

    @Test
    void stdoutAndStderrAreKeptApart() {
        ExecResult result = sandbox.exec("sh", "-c", "echo out 1; echo err 1 >&2; echo out 2; echo err 2 >&2");
        assertThat(result.stdout()).containsExactly("out 1", "out 2");
        assertThat(result.stderr()).containsExactly("err 1", "err 2");
    }

    @Test
    void nonZeroExitIsAResultNotAnException() {
        ExecResult result = sandbox.exec(Command.shell("echo failing >&2; exit 3"));
        assertThat(result.exitCode()).isEqualTo(3);
        assertThat(result.success()).isFalse();
        assertThat(result.stderrText()).isEqualTo("failing\n");
    }

    @Test
    void workdirAndEnvApplyPerCommand() {
        ExecResult result = sandbox.exec(
                Command.shell("pwd; echo \"$GREETING\"").workdir("/tmp").env("GREETING", "hi there"));
        assertThat(result.stdout()).containsExactly("/tmp", "hi there");
    }

    @Test
    void execWithoutInputSeesEndOfFileOnStdin() {
        ExecResult result = sandbox.exec("cat");
        assertThat(result.success()).isTrue();
        assertThat(result.stdoutText()).isEmpty();
    }

    @Test
    void aScriptWithoutExecutePermissionIsReportedAsSuchNotAsMissing() {
        sandbox.files().writeText("/tmp/report.sh", "echo report\n");
        assertThatThrownBy(() -> sandbox.exec("/tmp/report.sh"))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("permission denied in sandbox: /tmp/report.sh is not executable")
                .hasMessageContaining("chmod +x /tmp/report.sh")
                .hasMessageNotContaining("not found");
        assertThat(sandbox.exec("sh", "/tmp/report.sh").stdoutText()).isEqualTo("report\n");
        assertThatThrownBy(() -> sandbox.exec("/tmp/no-such-report.sh"))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("command not found in sandbox: /tmp/no-such-report.sh");
    }

    @Test
    void outputUpToTheLimitIsCollectedIntact() {
        // 48,894 bytes of stdout and 48,894 of stderr: exactly the limit together
        StringBuilder numbers = new StringBuilder();
        for (int i = 1; i <= 10_000; i++) {
            numbers.append(i).append('\n');
        }
        int limit = 2 * numbers.length();
        ExecResult result =
                sandbox.exec(Command.shell("seq 1 10000; seq 1 10000 >&2").outputLimit(limit));
        assertThat(result.success()).isTrue();
        assertThat(result.stdoutText()).isEqualTo(numbers.toString());
        assertThat(result.stderrText()).isEqualTo(numbers.toString());
    }

    @Test
    void execStopsACommandThatPrintsMoreThanItsLimitAndSaysToStreamInstead() {
        // yes never ends by itself: only the limit stops it
        assertThatThrownBy(
                        () -> sandbox.exec(Command.of("yes", "chalk-limit-4801").outputLimit(64 * 1024)))
                .isInstanceOf(ExecOutputLimitException.class)
                .hasMessageContaining("RESOURCE_EXHAUSTED")
                .hasMessageContaining("the output of yes in sandbox " + sandbox.id() + " went over 65536 bytes")
                .hasMessageContaining("use execStream")
                .hasMessageContaining("Command.outputLimit")
                .satisfies(e ->
                        assertThat(((ExecOutputLimitException) e).limitBytes()).isEqualTo(64 * 1024));
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(sandbox.exec(Command.shell("pgrep -f chalk-limit-[4]801 || echo gone"))
                                .stdoutText())
                        .isEqualTo("gone\n"));

        // stderr counts too, and so do collect() of a stream and waitFor() of a process
        assertThatThrownBy(() -> sandbox.exec(
                        Command.shell("head -c 100000 /dev/zero >&2").outputLimit(50_000)))
                .isInstanceOf(ExecOutputLimitException.class);
        try (ExecStream events =
                sandbox.execStream(Command.shell("head -c 100000 /dev/zero").outputLimit(50_000))) {
            assertThatThrownBy(events::collect).isInstanceOf(ExecOutputLimitException.class);
            assertThatThrownBy(events::collect).isInstanceOf(ExecOutputLimitException.class);
        }
        try (ExecProcess process = sandbox.execStart(Command.of("cat").outputLimit(10))) {
            process.writeStdin("more than ten bytes".getBytes(StandardCharsets.UTF_8));
            process.closeStdin();
            assertThatThrownBy(process::waitFor).isInstanceOf(ExecOutputLimitException.class);
        }
    }

    @Test
    void linesComeAsTheyAreWrittenAndStderrAndTheExitAreLeftForCollect() {
        List<String> lines = new ArrayList<>();
        List<Long> times = new ArrayList<>();
        long start = System.nanoTime();
        try (ExecStream run = sandbox.execStream(
                        Command.shell(
                                "for i in 1 2 3; do echo \"line $i\"; sleep 0.4; done; echo oops >&2; printf 'no newline'; exit 4"));
                Stream<String> out = run.lines()) {
            out.forEach(line -> {
                lines.add(line);
                times.add(System.nanoTime() - start);
            });
            ExecResult end = run.collect();
            assertThat(end.exitCode()).isEqualTo(4);
            assertThat(end.stderrText()).isEqualTo("oops\n");
            assertThat(end.stdoutText()).isEmpty();
        }
        assertThat(lines).containsExactly("line 1", "line 2", "line 3", "no newline");
        // the first line was read while the command still ran (it takes 1.2 s)
        assertThat(Duration.ofNanos(times.get(3) - times.get(0))).isGreaterThan(Duration.ofMillis(600));
    }

    @Test
    void linesAreWholeAcrossChunksAndTerminals() {
        try (ExecStream numbers = sandbox.execStream("seq", "1", "200000")) {
            List<String> lines = numbers.lines().toList();
            assertThat(lines).hasSize(200_000);
            for (int i = 0; i < lines.size(); i++) {
                assertThat(lines.get(i)).isEqualTo(Integer.toString(i + 1));
            }
        }
        try (ExecStream terminal =
                sandbox.execStream(Command.shell("echo one; echo two").pty(80, 24))) {
            assertThat(terminal.lines()).containsExactly("one", "two"); // without the terminal's \r
        }
        // one endless line is not held whole
        try (ExecStream endless =
                sandbox.execStream(Command.shell("tr -d '\\n' < /dev/zero").outputLimit(100_000))) {
            assertThatThrownBy(() -> endless.lines().count())
                    .isInstanceOf(ExecOutputLimitException.class)
                    .hasMessageContaining("execStream");
        }
    }

    @Test
    void streamedOutputArrivesWhileTheCommandRuns() {
        List<Long> stdoutTimes = new ArrayList<>();
        List<String> lines = new ArrayList<>();
        long exitedAt = 0;
        long start = System.nanoTime();
        try (ExecStream events = sandbox.execStream("sh", "-c", "for i in 1 2 3; do echo line $i; sleep 1; done")) {
            for (ExecEvent event : events) {
                long at = System.nanoTime() - start;
                if (event.stdoutText() != null) {
                    stdoutTimes.add(at);
                    lines.add(event.stdoutText());
                } else if (event.isExited()) {
                    exitedAt = at;
                    assertThat(event.exitCode()).hasValue(0);
                }
            }
        }
        assertThat(String.join("", lines)).isEqualTo("line 1\nline 2\nline 3\n");
        assertThat(stdoutTimes).hasSizeGreaterThanOrEqualTo(2);
        assertThat(exitedAt).isPositive();
        assertThat(Duration.ofNanos(exitedAt - stdoutTimes.get(0)))
                .as("the first line arrived long before the exit")
                .isGreaterThan(Duration.ofMillis(1500));
    }

    @Test
    void fastOutputWrittenInSmallPiecesArrivesInLargeChunks() {
        long bytes = 16L << 20; // head writes 8 KiB at a time
        long received = 0;
        int chunks = 0;
        try (ExecStream events = sandbox.execStream("head", "-c", Long.toString(bytes), "/dev/zero")) {
            for (ExecEvent event : events) {
                if (event instanceof ExecEvent.Stdout out) {
                    received += out.data().length;
                    chunks++;
                }
            }
        }
        assertThat(received).isEqualTo(bytes);
        assertThat(received / chunks)
                .as("average bytes per chunk over %d chunks (each costs the transport and the client)", chunks)
                .isGreaterThan(32L * 1024);
    }

    @Test
    void streamCanBeConsumedAsAJavaStream() {
        try (ExecStream events = sandbox.execStream("sh", "-c", "echo a; echo b >&2")) {
            List<ExecEvent> all = events.stream().toList();
            assertThat(all.get(0)).isInstanceOf(ExecEvent.Started.class);
            assertThat(all.get(all.size() - 1).isExited()).isTrue();
            assertThat(all)
                    .filteredOn(e -> e.stdoutText() != null)
                    .extracting(ExecEvent::stdoutText)
                    .containsExactly("a\n");
            assertThat(all)
                    .filteredOn(e -> e.stderrText() != null)
                    .extracting(ExecEvent::stderrText)
                    .containsExactly("b\n");
        }
    }

    @Test
    void stdinRoundTripsThroughAnInteractiveProcess() {
        try (ExecProcess cat = sandbox.execStart("cat")) {
            assertThat(cat.pid()).isPositive();
            cat.writeStdin("hello\n");
            // the echo comes back while stdin is still open: the process really is interactive
            Iterator<ExecEvent> output = cat.output().iterator();
            StringBuilder echoed = new StringBuilder();
            while (!echoed.toString().equals("hello\n")) {
                ExecEvent event = output.next();
                if (event.stdoutText() != null) {
                    echoed.append(event.stdoutText());
                }
            }
            cat.writeStdin("wörld\n".getBytes(StandardCharsets.UTF_8));
            cat.closeStdin();
            ExecResult rest = cat.waitFor();
            assertThat(rest.stdoutText()).isEqualTo("wörld\n");
            assertThat(rest.success()).isTrue();
        }
    }

    @Test
    void sigtermEndsTheProcessAndIsReportedAsItsSignal() {
        try (ExecProcess sleep = sandbox.execStart("sleep", "100")) {
            sleep.pid();
            sleep.sendSignal(Signal.TERM);
            ExecResult result = sleep.waitFor(Duration.ofSeconds(20)).orElseThrow();
            assertThat(result.signal()).hasValue(15);
            assertThat(result.exitCode()).isEqualTo(128 + 15);
            assertThat(result.success()).isFalse();
        }
    }

    @Test
    void sigkillIsReportedAsItsSignal() {
        try (ExecProcess sleep = sandbox.execStart(Command.of("sleep", "100"))) {
            sleep.pid();
            sleep.sendSignal(9);
            ExecResult result = sleep.waitFor(Duration.ofSeconds(20)).orElseThrow();
            assertThat(result.signal()).hasValue(9);
            assertThat(result.exitCode()).isEqualTo(137);
        }
    }

    @Test
    void timeoutKillsTheCommandAndEverythingItStarted() {
        String marker = "100." + Math.abs(UUID.randomUUID().getMostSignificantBits() % 100000);
        long start = System.nanoTime();
        assertThatThrownBy(() ->
                        sandbox.exec(Command.shell("echo started; sleep " + marker + " & sleep " + marker + " & wait")
                                .timeout(Duration.ofSeconds(1))))
                .isInstanceOf(ExecTimeoutException.class)
                .satisfies(e -> {
                    ExecResult partial = ((ExecTimeoutException) e).partialResult();
                    assertThat(partial.stdoutText()).isEqualTo("started\n");
                    assertThat(partial.success()).isFalse();
                });
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(ProcessHandle.allProcesses()
                                .filter(p -> p.info().commandLine().orElse("").contains("sleep " + marker))
                                .map(p -> p.pid() + " " + p.info().commandLine().orElse(""))
                                .toList())
                        .as("sleep processes left on the host")
                        .isEmpty());
    }

    @Test
    void closingAStreamCancelsTheCommand() {
        String marker = "200." + Math.abs(UUID.randomUUID().getMostSignificantBits() % 100000);
        try (ExecStream stream = sandbox.execStream(Command.shell("echo ready; sleep " + marker))) {
            Iterator<ExecEvent> events = stream.iterator();
            ExecEvent first;
            do {
                first = events.next();
            } while (!(first instanceof ExecEvent.Stdout));
            assertThat(first.stdoutText()).isEqualTo("ready\n");
        }
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(ProcessHandle.allProcesses()
                                .filter(p -> p.info().commandLine().orElse("").contains("sleep " + marker))
                                .toList())
                        .as("the cancelled command is gone from the host")
                        .isEmpty());
    }

    @Test
    void largeStdinRoundTripsIntact() throws Exception {
        byte[] input = new byte[3_000_000];
        new java.util.Random(7).nextBytes(input);
        try (ExecProcess sum = sandbox.execStart("sha256sum")) {
            sum.writeStdin(input);
            sum.closeStdin();
            ExecResult result = sum.waitFor();
            String expected = HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-256").digest(input));
            assertThat(result.stdoutText()).startsWith(expected);
            assertThat(result.success()).isTrue();
            assertThatThrownBy(() -> sum.writeStdin("more")).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void waitForWithATimeoutReturnsEmptyWhileRunningAndCanBeRepeated() {
        try (ExecProcess cat = sandbox.execStart("cat")) {
            cat.writeStdin("a");
            assertThat(cat.waitFor(Duration.ofMillis(200))).isEmpty();
            cat.writeStdin("b");
            assertThat(cat.waitFor(Duration.ofMillis(200))).isEmpty();
            cat.closeStdin();
            await().atMost(Duration.ofSeconds(5))
                    .until(() -> cat.waitFor(Duration.ofMillis(100)).isPresent());
            assertThat(cat.waitFor().stdoutText()).isEqualTo("ab");
        }
    }

    @Test
    void aTerminalCommandWritesToItsPty() {
        Command onTerminal = Command.of(
                        "sh", "-c", "[ -t 0 ] && [ -t 1 ] && echo on-a-terminal; echo size=$(stty size)")
                .pty(100, 30);
        try (ExecStream events = sandbox.execStream(onTerminal)) {
            List<ExecEvent> all = events.stream().toList();
            assertThat(all).noneMatch(e -> e instanceof ExecEvent.Stdout || e instanceof ExecEvent.Stderr);
            assertThat(all).filteredOn(e -> e instanceof ExecEvent.PtyOutput).isNotEmpty();
        }
        ExecResult result = sandbox.exec(onTerminal);
        // a terminal turns \n into \r\n
        assertThat(result.stdoutText()).contains("on-a-terminal\r\n").contains("size=30 100");
    }

    @Test
    void resizeChangesTheTerminalSize() {
        try (ExecProcess shell =
                sandbox.execStart(Command.shell("read go; stty size").pty(80, 24))) {
            shell.resize(132, 43);
            shell.writeStdin("\n");
            ExecResult result = shell.waitFor(Duration.ofSeconds(20)).orElseThrow();
            assertThat(result.stdoutText()).contains("43 132");
        }
    }

    @Test
    void hundredMegabytesStreamIntactWithBoundedMemory() throws Exception {
        long baseline = usedHeapAfterGc();
        MessageDigest actual = MessageDigest.getInstance("SHA-256");
        long received = 0;
        long midStreamGrowth = -1;
        try (ExecStream events = sandbox.execStream(Command.shell("yes '" + YES_LINE + "' | head -c " + HUNDRED_MB))) {
            for (ExecEvent event : events) {
                if (event instanceof ExecEvent.Stdout out) {
                    byte[] data = out.data();
                    actual.update(data);
                    long before = received;
                    received += data.length;
                    if (before < HUNDRED_MB / 2 && received >= HUNDRED_MB / 2) {
                        midStreamGrowth = usedHeapAfterGc() - baseline;
                    }
                } else if (event.isExited()) {
                    assertThat(event.exitCode()).hasValue(0);
                } else {
                    assertThat(event).isInstanceOf(ExecEvent.Started.class);
                }
            }
        }
        assertThat(received).isEqualTo(HUNDRED_MB);
        assertThat(HexFormat.of().formatHex(actual.digest())).isEqualTo(expectedYesSha256(HUNDRED_MB));
        assertThat(midStreamGrowth)
                .as("heap retained half-way through 100 MB (client and server share this JVM)")
                .isBetween(-HUNDRED_MB, 32L * 1024 * 1024);
    }

    @Test
    void fiftyConcurrentExecsAllSucceed() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(50);
        try {
            List<Future<ExecResult>> results = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                int n = i;
                results.add(pool.submit(
                        () -> sandbox.exec("sh", "-c", "sleep 0.2; echo exec $0; echo done >&2", String.valueOf(n))));
            }
            for (int i = 0; i < 50; i++) {
                ExecResult result = results.get(i).get(60, TimeUnit.SECONDS);
                assertThat(result.success()).isTrue();
                assertThat(result.stdout()).containsExactly("exec " + i);
                assertThat(result.stderr()).containsExactly("done");
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void anUnreadStreamDoesNotStallOtherCommands() throws Exception {
        long baseline = usedHeapAfterGc();
        try (ExecStream stalled = sandbox.execStream(Command.shell("yes '" + YES_LINE + "' | head -c " + HUNDRED_MB))) {
            Iterator<ExecEvent> it = stalled.iterator();
            assertThat(it.next()).isInstanceOf(ExecEvent.Started.class);
            assertThat(it.next().stdoutText()).startsWith(YES_LINE);
            // nobody reads the rest: the producer must block on its pipe, and nothing may pile up in this JVM
            // (yes | head writes 100 MB in well under the second waited here when nothing holds it back)
            Thread.sleep(1500);
            assertThat(usedHeapAfterGc() - baseline)
                    .as("heap retained by an unread 100 MB stream")
                    .isLessThan(32L * 1024 * 1024);
            long start = System.nanoTime();
            ExecResult other = sandbox.exec("echo", "still served");
            assertThat(other.stdoutText()).isEqualTo("still served\n");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
            try (ExecStream second = sandbox.execStream("sh", "-c", "echo x; echo y")) {
                assertThat(second.collect().stdout()).containsExactly("x", "y");
            }
        }
    }

    // ---- lifecycle ----

    @Test
    void listGetRefreshAndTerminate() {
        String name = "e2e-" + UUID.randomUUID();
        Sandbox created = client.create(Sandbox.builder().name(name).env("GREETING", "from the sandbox"));
        assertThat(created.info().name()).contains(name);
        assertThat(created.info().isRunning()).isTrue();
        assertThat(created.info().createdAt())
                .isNotNull()
                .isBefore(java.time.Instant.now().plusSeconds(5));
        assertThat(created.exec("sh", "-c", "echo $GREETING").stdoutText()).isEqualTo("from the sandbox\n");

        assertThat(client.list()).extracting(SandboxInfo::id).contains(created.id(), sandbox.id());
        SandboxPage firstPage = client.list(ListOptions.defaults().limit(1));
        assertThat(firstPage.sandboxes()).hasSize(1);
        assertThat(firstPage.hasMore()).isTrue();
        SandboxPage secondPage = client.list(
                ListOptions.defaults().limit(1).cursor(firstPage.nextCursor().get()));
        assertThat(secondPage.sandboxes()).hasSize(1).doesNotContainAnyElementsOf(firstPage.sandboxes());

        Sandbox handle = client.get(created.id());
        assertThat(handle.id()).isEqualTo(created.id());
        assertThat(handle.info().name()).contains(name);
        assertThat(handle.refresh().state()).isEqualTo("RUNNING");

        handle.terminate(Duration.ofSeconds(1));
        SandboxInfo after = created.refresh();
        assertThat(after.isTerminated()).isTrue();
        assertThat(created.info()).isEqualTo(after);
        assertThat(client.list()).extracting(SandboxInfo::id).doesNotContain(created.id());
        assertThat(client.list(ListOptions.defaults().includeTerminated(true).limit(1000))
                        .sandboxes())
                .extracting(SandboxInfo::id)
                .contains(created.id());
        assertThatThrownBy(() -> created.exec("echo", "too late"))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining(created.id());
    }

    @Test
    void oneDefinitionStartsAsManySandboxesAsItIsGivenToCreate() {
        SandboxDefinition defined = Sandbox.builder()
                .tag("run", UUID.randomUUID().toString())
                .workdir("/tmp")
                .build();
        try (Sandbox first = client.create(defined);
                Sandbox second = client.create(defined)) {
            assertThat(first.id()).isNotEqualTo(second.id());
            assertThat(first.exec("pwd").stdoutText()).isEqualTo("/tmp\n");
            assertThat(second.info().tags()).isEqualTo(defined.tags());
        }
    }

    // ---- errors ----

    @Test
    void unknownSandboxIsNotFound() {
        assertThatThrownBy(() -> client.get("no-such-sandbox"))
                .isInstanceOf(SandboxNotFoundException.class)
                .hasMessageContaining("no-such-sandbox");
        Sandbox ghost = new Sandbox(
                client,
                new SandboxInfo(
                        "no-such-sandbox",
                        java.util.Optional.empty(),
                        "RUNNING",
                        null,
                        java.util.Optional.empty(),
                        java.util.Optional.empty()));
        assertThatThrownBy(() -> ghost.exec("echo"))
                .isInstanceOf(SandboxNotFoundException.class)
                .hasMessageContaining("no-such-sandbox");
        assertServerStillServes();
    }

    @Test
    void emptyCommandIsAnInvalidRequest() {
        assertThatThrownBy(() -> sandbox.exec("")).isInstanceOf(InvalidRequestException.class);
        assertServerStillServes();
    }

    @Test
    void malformedMemoryIsAnInvalidRequestNamingTheField() {
        assertThatThrownBy(() -> client.create(Sandbox.builder().memory("4Gx")))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessageContaining("memory")
                .hasMessageContaining("4Gx");
        assertServerStillServes();
    }

    @Test
    void execAfterTerminateIsAFailedPrecondition() {
        Sandbox doomed = client.create();
        doomed.terminate();
        assertThatThrownBy(() -> doomed.exec("echo", "hi")).isInstanceOf(FailedPreconditionException.class);
        assertServerStillServes();
    }

    private void assertServerStillServes() {
        assertThat(sandbox.exec("echo", "ok").stdoutText()).isEqualTo("ok\n");
    }

    // ---- helpers ----

    private static long usedHeapAfterGc() throws InterruptedException {
        Runtime rt = Runtime.getRuntime();
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
            best = Math.min(best, rt.totalMemory() - rt.freeMemory());
        }
        return best;
    }

    private static String expectedYesSha256(long size) throws Exception {
        MessageDigest expected = MessageDigest.getInstance("SHA-256");
        byte[] line = (YES_LINE + "\n").getBytes(StandardCharsets.US_ASCII);
        byte[] block = new byte[line.length * 4096];
        for (int i = 0; i < 4096; i++) {
            System.arraycopy(line, 0, block, i * line.length, line.length);
        }
        long left = size;
        while (left > 0) {
            int n = (int) Math.min(block.length, left);
            expected.update(block, 0, n);
            left -= n;
        }
        return HexFormat.of().formatHex(expected.digest());
    }
}
