package ai.chalk.compute.function.remote;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.deploy.WorkerMode;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.SandboxInfo;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import com.acme.Agents;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A deployed function that creates a sandbox and returns it: the worker (a JVM in its own sandbox, with only
 * loopback) reaches the server that runs it through the socket bound into its replica, and the caller gets a
 * working handle carrying only the sandbox's id. Real server, real worker.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class DeployedSandboxFunctionTest {

    @TempDir
    Path dataDir;

    @Test
    void aFunctionCreatesASandboxThroughItsServerAndTheCallerUsesIt() throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client =
                        SandboxClient.connect("127.0.0.1:" + server.port().orElseThrow());
                CodeSnapshot code = CodeSnapshot.ofClassPath()) {
            FunctionRegistry registry = new FunctionRegistry();
            registry.register(new Agents(client)); // the deploying side's instance; the worker makes its own
            for (String name : List.of("provisionAgent", "run")) {
                client.functions().deploy(registry.get(name).definition(), code, WorkerMode.PLAIN, false);
            }

            Sandbox sandbox =
                    (Sandbox) RemoteFunction.fromName(client, "provisionAgent").call();
            try {
                SandboxInfo info = sandbox.info();
                assertThat(info.isRunning()).isTrue();
                assertThat(sandbox.exec("ls", "-d", "/tmp/workspace").stdoutText())
                        .as("the function's own exec in it left its mark")
                        .isEqualTo("/tmp/workspace\n");
                assertThat(client.list().stream().map(SandboxInfo::id)).contains(sandbox.id());

                Object echoed = RemoteFunction.fromName(client, "run").call(sandbox, "hello from the caller");
                assertThat(echoed)
                        .as("a sandbox argument reaches the worker as a handle it can use")
                        .isEqualTo("hello from the caller");
            } finally {
                sandbox.terminate();
            }
            assertThat(sandbox.refresh().isTerminated()).isTrue();
        }
    }
}
