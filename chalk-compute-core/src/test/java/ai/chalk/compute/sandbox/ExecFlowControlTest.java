package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.DeadlineExceededException;
import ai.chalk.compute.error.InvalidRequestException;
import ai.chalk.compute.error.SandboxNotFoundException;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessServerBuilder;
import java.time.Duration;
import java.util.Arrays;
import java.util.Iterator;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The client's side of the Exec stream against exact wire sequences: manual flow control bounds
 * what is buffered, and errors map the same whether they come as an ExecError or a status.
 */
class ExecFlowControlTest {

    private final ScriptedSandboxService service = new ScriptedSandboxService();
    private Server server;
    private SandboxClient client;
    private Sandbox sandbox;

    @BeforeEach
    void start() throws Exception {
        String name = "scripted-" + UUID.randomUUID();
        server = InProcessServerBuilder.forName(name).addService(service).build().start();
        client = SandboxClient.inProcess(name);
        sandbox = client.create();
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    @Test
    void aConsumerThatDoesNotReadStopsTheServerFromSending() throws Exception {
        int chunks = 1600; // 100 MiB
        try (ExecStream events = sandbox.execStream("flood", String.valueOf(chunks))) {
            Iterator<ExecEvent> it = events.iterator();
            assertThat(it.next()).isEqualTo(new ExecEvent.Started(42));
            Thread.sleep(500);
            int sentWhileIdle = service.floodSent.get();
            assertThat(sentWhileIdle).as("messages sent while nobody reads").isLessThanOrEqualTo(ExecCall.PREFETCH + 2);

            long bytes = 0;
            int index = 0;
            ExecEvent event;
            while (!(event = it.next()).isExited()) {
                byte[] data = ((ExecEvent.Stdout) event).data();
                assertThat(data).hasSize(ScriptedSandboxService.CHUNK);
                assertThat(data[0]).isEqualTo((byte) index);
                bytes += data.length;
                index++;
            }
            assertThat(bytes).isEqualTo((long) chunks * ScriptedSandboxService.CHUNK);
            assertThat(event.exitCode()).hasValue(0);
            assertThat(it.hasNext()).isFalse();
        }
    }

    @Test
    void closingAStreamCancelsTheCall() throws Exception {
        ExecStream events = sandbox.execStream("flood", "1000");
        events.iterator().next();
        events.close();
        assertThat(service.cancelled.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(events.iterator().hasNext()).isFalse();
    }

    @Test
    void execErrorFollowedByStatusMapsToOneTypedException() {
        assertThatThrownBy(() -> sandbox.exec("error-then-status"))
                .isExactlyInstanceOf(SandboxNotFoundException.class)
                .hasMessageContaining("sandbox nope not found")
                .satisfies(e -> assertThat(((ChalkComputeException) e).statusCode()).isEqualTo(Status.Code.NOT_FOUND));
        try (ExecStream events = sandbox.execStream("error-then-status")) {
            Iterator<ExecEvent> it = events.iterator();
            assertThat(it.next()).isInstanceOf(ExecEvent.Started.class);
            assertThatThrownBy(it::hasNext).isExactlyInstanceOf(SandboxNotFoundException.class);
            assertThatThrownBy(it::hasNext).as("the failure is sticky").isInstanceOf(SandboxNotFoundException.class);
        }
    }

    @Test
    void statusWithoutExecErrorMapsToTheSameTypes() {
        assertThatThrownBy(() -> sandbox.exec("status-only"))
                .isExactlyInstanceOf(InvalidRequestException.class)
                .hasMessageContaining("command: must not be empty");
    }

    @Test
    void timeoutAfterExitKeepsThePartialOutput() {
        assertThatThrownBy(() -> sandbox.exec("timeout"))
                .isInstanceOf(ExecTimeoutException.class)
                .isInstanceOf(DeadlineExceededException.class)
                .hasMessageContaining("timed out after 1s")
                .satisfies(e -> {
                    ExecResult partial = ((ExecTimeoutException) e).partialResult();
                    assertThat(partial.stdoutText()).isEqualTo("partial\n");
                    assertThat(partial.stderrText()).isEqualTo("err\n");
                    assertThat(partial.signal()).hasValue(9);
                    assertThat(partial.exitCode()).isEqualTo(137);
                });
    }

    @Test
    void aStreamEndingWithoutExitIsAnError() {
        assertThatThrownBy(() -> sandbox.exec("no-exit"))
                .isInstanceOf(ChalkComputeException.class)
                .hasMessageContaining("without reporting how the process ended");
    }

    @Test
    void largeStdinIsSentInChunksAndEchoedBack() {
        byte[] input = new byte[1_000_000];
        Arrays.fill(input, (byte) 'x');
        try (ExecProcess cat = sandbox.execStart("cat")) {
            assertThat(cat.pid()).isEqualTo(42);
            cat.writeStdin(input);
            cat.closeStdin();
            ExecResult result = cat.waitFor();
            assertThat(result.stdoutBytes()).isEqualTo(input);
            assertThat(result.success()).isTrue();
            assertThatThrownBy(() -> cat.writeStdin("more")).isInstanceOf(IllegalStateException.class);
            cat.sendSignal(Signal.TERM); // no-op once exited
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
            await().atMost(Duration.ofSeconds(5)).until(() -> cat.waitFor(Duration.ofMillis(100)).isPresent());
            assertThat(cat.waitFor().stdoutText()).isEqualTo("ab");
        }
    }
}
