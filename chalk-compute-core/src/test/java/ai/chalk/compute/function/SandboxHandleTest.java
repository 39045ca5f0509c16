package ai.chalk.compute.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.function.arrow.ArrowPayloadException;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import com.acme.Agents;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A function returns a sandbox; the caller, with its own client, gets a working handle from the
 * Arrow result, as Chalk's Python SDK does. Runs against a real in-process server.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SandboxHandleTest {

    private ComputeServer server;
    private SandboxClient workerClient;
    private SandboxClient callerClient;
    private final FunctionRegistry registry = new FunctionRegistry();

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).build().start();
        workerClient = SandboxClient.inProcess(server.inProcessName());
        callerClient = SandboxClient.inProcess(server.inProcessName());
        registry.register(new Agents(workerClient));
    }

    @AfterAll
    void stop() {
        if (callerClient != null) {
            callerClient.close();
        }
        if (workerClient != null) {
            workerClient.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void aReturnedSandboxTravelsAsItsIdAndTheCallerRebuildsAWorkingHandle() {
        RegisteredFunction provision = registry.get("provisionAgent");
        byte[] result = provision.call(provision.payloads().encodeCall());

        Sandbox sandbox = (Sandbox) provision.payloads().decodeResult(result, DecodeContext.of(callerClient));
        try {
            assertThat(sandbox.exec("ls", "-d", "/tmp/workspace").stdoutText()).isEqualTo("/tmp/workspace\n");
            assertThat(sandbox.info().isRunning()).isTrue();
        } finally {
            sandbox.terminate();
        }
        assertThat(sandbox.refresh().isTerminated()).isTrue();
    }

    @Test
    void optionalAndListResultsAndSandboxArgumentsWork() {
        RegisteredFunction maybe = registry.get("maybeProvision");
        List<Object> maybes = maybe.payloads()
                .decodeResults(
                        maybe.call(maybe.payloads().encodeBatch(List.of(new Object[] {true}, new Object[] {false}))),
                        DecodeContext.of(callerClient));
        assertThat(maybes.get(1)).isEqualTo(Optional.empty());
        Sandbox single = ((Optional<?>) maybes.get(0)).map(Sandbox.class::cast).orElseThrow();

        RegisteredFunction many = registry.get("provisionMany");
        @SuppressWarnings("unchecked")
        List<Sandbox> sandboxes = (List<Sandbox>)
                many.payloads().decodeResult(many.call(many.payloads().encodeCall(2)), DecodeContext.of(callerClient));
        assertThat(sandboxes).hasSize(2);
        assertThat(many.payloads().decodeResult(many.call(many.payloads().encodeCall(0)), DecodeContext.empty()))
                .isEqualTo(List.of());

        RegisteredFunction run = registry.get("run");
        try {
            byte[] call = run.payloads().encodeCall(sandboxes.get(1), "hello from the caller");
            assertThat(run.payloads()
                            .decodeResult(run.call(call, DecodeContext.of(workerClient)), DecodeContext.empty()))
                    .isEqualTo("hello from the caller");
        } finally {
            single.terminate();
            sandboxes.forEach(Sandbox::terminate);
        }
    }

    @Test
    void decodingASandboxNeedsAClient() {
        RegisteredFunction provision = registry.get("provisionAgent");
        byte[] result = provision.call(provision.payloads().encodeCall());
        try {
            assertThatThrownBy(() -> provision.payloads().decodeResult(result, DecodeContext.empty()))
                    .isInstanceOf(ArrowPayloadException.class)
                    .hasMessage(
                            "row 0, column 'output': a SandboxClient is needed to rebuild a Sandbox handle: decode "
                                    + "with a DecodeContext that holds one (DecodeContext.empty().with(SandboxClient.class, ...))");
        } finally {
            ((Sandbox) provision.payloads().decodeResult(result, DecodeContext.of(callerClient))).terminate();
        }
    }

    @Test
    void attachingAsksTheServerOnlyWhenNeeded() {
        Sandbox handle = callerClient.attach("no-such-sandbox");
        assertThat(handle.id()).isEqualTo("no-such-sandbox");
        assertThatThrownBy(handle::info).isInstanceOf(ai.chalk.compute.error.SandboxNotFoundException.class);
    }
}
