package ai.chalk.compute.function.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.error.FunctionNotFoundException;
import ai.chalk.compute.function.FunctionDefinitionException;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import com.acme.SecretReader;
import com.acme.Tally;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code client.functions().deploy(Class...)} against a real server, in process and over TCP: the background
 * deployment, its handles' version management, a failure seen by {@code await()}, and the report at exit of a
 * failure nobody awaited in a plain Java program.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class FunctionsOutsideSpringTest {

    @TempDir
    Path dataDir;

    @Test
    void oneCallDeploysAClassAndItsHandlesManageTheVersionsInProcess() throws Exception {
        deployAndManage(server -> SandboxClient.inProcess(server.inProcessName()));
    }

    @Test
    void oneCallDeploysAClassAndItsHandlesManageTheVersionsOverTcp() throws Exception {
        deployAndManage(
                server -> SandboxClient.connect("localhost:" + server.port().orElseThrow()));
    }

    /** A client of the server in this JVM, or over TCP on its port as a standalone server's client connects. */
    private static SandboxClient connect(ComputeServer server, String transport) {
        return transport.equals("tcp")
                ? SandboxClient.connect("localhost:" + server.port().orElseThrow())
                : SandboxClient.inProcess(server.inProcessName());
    }

    private void deployAndManage(Function<ComputeServer, SandboxClient> connect) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client = connect.apply(server)) {
            List<DeployedFunction> deployed = client.functions().deploy(Tally.class);
            assertThat(deployed).extracting(DeployedFunction::name).containsExactly("explode", "label", "sum");
            DeployedFunction sum = deployed.get(2);
            FunctionVersion first = sum.await();
            assertThat(first.version()).isEqualTo(1);
            assertThat(sum.awaitReady(java.time.Duration.ofSeconds(60)).status())
                    .as("its replicas serve (shown as 'Waiting for replicas' steps meanwhile)")
                    .isEqualTo("ready");
            assertThat(RemoteFunction.fromName(client, "sum").call(2L, 40L)).isEqualTo(42L);
            deployed.forEach(DeployedFunction::await);

            assertThat(sum.deploy(false).id()).as("unchanged: reused").isEqualTo(first.id());
            FunctionVersion second = sum.deploy(true);
            assertThat(second.version()).isEqualTo(2);
            assertThat(sum.versions()).extracting(FunctionVersion::version).containsExactly(1, 2);
            assertThat(sum.refresh().id()).isEqualTo(second.id());

            sum.rollback(first.id());
            assertThat(sum.refresh().id())
                    .as("the rollback made the first version current")
                    .isEqualTo(first.id());
            assertThat(sum.versions())
                    .filteredOn(FunctionVersion::current)
                    .extracting(FunctionVersion::id)
                    .containsExactly(first.id());

            sum.delete();
            assertThatThrownBy(sum::refresh).isInstanceOf(FunctionNotFoundException.class);
            assertThat(deployed.get(1).refresh().version())
                    .as("its neighbours stay")
                    .isEqualTo(1);
        }
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"in-process", "tcp"})
    void aFailedDeploymentIsThrownByAwait(String transport) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client = connect(server, transport)) {
            DeployedFunction read =
                    client.functions().deploy(SecretReader.class).get(0);
            assertThatThrownBy(read::await)
                    .isInstanceOf(FailedPreconditionException.class)
                    .hasMessageContaining("FN_SECRET");
            assertThat(read.unobservedFailure())
                    .as("awaited: not reported at exit")
                    .isFalse();
            assertThat(read).hasToString("DeployedFunction[readEnv, failed]");
        }
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"in-process", "tcp"})
    void aFunctionAskingForAGpuIsRefusedByAServerWithoutGpusRatherThanRunWithout(String transport) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client = connect(server, transport)) {
            DeployedFunction score =
                    client.functions().deploy(com.acme.GpuScorer.class).get(0);
            assertThat(score.definition().deployment().gpu()).contains("1");
            assertThatThrownBy(score::await)
                    .isInstanceOf(FailedPreconditionException.class)
                    .hasMessageContaining("gpu")
                    .hasMessageContaining("no GPUs");
        }
    }

    @Test
    void aClassWithoutFunctionsIsRefusedAtOnce() {
        try (SandboxClient client = SandboxClient.connect("localhost:1")) {
            assertThatThrownBy(() -> client.functions().deploy(String.class))
                    .isInstanceOf(FunctionDefinitionException.class)
                    .hasMessageContaining("java.lang.String has no public method annotated with @ChalkFunction");
            assertThatThrownBy(() -> client.functions().deploy()).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void aProgramThatOnlyDeploysWaitsForItsDeploymentsAndReportsAnUnobservedFailureAtExit() throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .auth(Authentication.Mode.NONE)
                .build()
                .start()) {
            String java =
                    Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Process process = new ProcessBuilder(
                            java,
                            "-Xmx256m",
                            "-cp",
                            System.getProperty("java.class.path"),
                            DeployAtExitMain.class.getName(),
                            "localhost:" + server.port().orElseThrow())
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            String stderr = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(process.waitFor(120, TimeUnit.SECONDS)).isTrue();
            assertThat(process.exitValue()).as(stderr).isEqualTo(1);
            assertThat(stderr)
                    .contains("Unobserved background failure: Deploying function \"readEnv\""
                            + " at com.acme.SecretReader.readEnv(SecretReader.java)")
                    .containsOnlyOnce("\n  FAILED_PRECONDITION: spec.container_spec.secret_refs[0]: secret FN_SECRET");
            try (SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
                assertThat(client.functions().current("sum").version())
                        .as("the functions that could deploy were deployed before the program ended")
                        .isEqualTo(1);
            }
        }
    }
}
