package ai.chalk.compute.cli;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.cli.CommandLineParsingTest.Run;
import ai.chalk.compute.function.deploy.DeployedFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.SandboxInfo;
import ai.chalk.compute.server.ComputeServer;
import com.example.cli.Greeter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The non-interactive commands against a real server in this JVM (local runtime, real sandboxes, a function deployed
 * with a real worker process): what they print and exit with, as a script calling them would see it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class CommandsOnAServerTest {

    static final String BUSYBOX = "chalk-compute-test/busybox:latest";

    ComputeServer server;
    SandboxClient sdk;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).build().start();
        sdk = SandboxClient.inProcess(server.inProcessName());
    }

    @AfterAll
    void stop() {
        sdk.close();
        server.close();
    }

    Run cli(String... args) {
        return CommandLineParsingTest.run(() -> SandboxClient.inProcess(server.inProcessName()), args);
    }

    @Test
    void createListExecAndTerminateASandbox() {
        Run created = cli("sandbox", "create", "--name", "cli-test", "--env", "GREETING=hi", "--tag", "team=cli");
        assertThat(created.status()).as(created.err()).isZero();
        String id = created.out().strip();
        assertThat(sdk.get(id).info().tags()).containsEntry("team", "cli");

        Run listed = cli("sandbox", "list");
        assertThat(listed.out().lines().findFirst()).hasValue("ID" + " ".repeat(36) + "NAME      STATE    CREATED");
        assertThat(listed.out())
                .containsPattern(id + "  cli-test  RUNNING  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ");
        assertThat(cli("sandbox", "list", "--quiet").out().lines()).contains(id);

        Run exec = cli("sandbox", "exec", id, "--", "sh", "-c", "echo $GREETING; echo oops >&2; exit 3");
        assertThat(exec.status()).isEqualTo(3);
        assertThat(exec.out()).isEqualTo("hi\n");
        assertThat(exec.err()).isEqualTo("oops\n");

        Run terminated = cli("sandbox", "terminate", id);
        assertThat(terminated.out()).isEqualTo("terminated " + id + "\n");
        assertThat(sdk.list()).extracting(SandboxInfo::id).doesNotContain(id);
    }

    @Test
    void anImageBuiltFromTheCommandLineRunsSandboxes() throws Exception {
        Process inspect = new ProcessBuilder("docker", "image", "inspect", BUSYBOX)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        assertThat(inspect.waitFor(30, TimeUnit.SECONDS) && inspect.exitValue() == 0)
                .as("the base image %s (ci/build-test-images.sh builds it; CI runs it before the tests)", BUSYBOX)
                .isTrue();
        Run built = cli(
                "image",
                "build",
                "--base",
                BUSYBOX,
                "--run",
                "echo built-by-the-cli > /marker",
                "--env",
                "GREETING=hi");
        assertThat(built.status()).as(built.err()).isZero();
        String ref = built.out().strip();
        assertThat(ref).startsWith("chalk-local/");

        String id = cli("sandbox", "create", "--image", ref).out().strip();
        Run exec = cli("sandbox", "exec", id, "--", "sh", "-c", "cat /marker; echo $GREETING");
        assertThat(exec.out()).isEqualTo("built-by-the-cli\nhi\n");
        cli("sandbox", "terminate", "--now", id);
    }

    @Test
    void anUnknownSandboxIsOneLineAndStatusOne() {
        Run exec = cli("sandbox", "exec", "no-such-sandbox", "true");
        assertThat(exec.status()).isEqualTo(1);
        assertThat(exec.err()).isEqualTo("error: NOT_FOUND: sandbox no-such-sandbox does not exist on this server\n");
    }

    @Test
    void listCallVersionsAndRollBackADeployedFunction() {
        // the only test that deploys: the catalog is empty until it does
        Run functions = cli("function", "list");
        assertThat(functions.status()).isZero();
        assertThat(functions.out()).isEqualTo("NAME  VERSION  SIGNATURE\n");

        Run unknownCall = cli("function", "call", "greet", "Ada");
        assertThat(unknownCall.status()).isEqualTo(1);
        assertThat(unknownCall.err()).isEqualTo("error: no function named greet; none is deployed\n");

        Run unknownVersions = cli("function", "versions", "greet");
        assertThat(unknownVersions.status()).isEqualTo(1);
        assertThat(unknownVersions.err()).startsWith("error: ").contains("greet");

        List<DeployedFunction> deployed = sdk.functions().deploy(Greeter.class);
        DeployedFunction greet = deployed.get(0);
        greet.await();

        Run list = cli("function", "list");
        assertThat(list.out())
                .isEqualTo("NAME   VERSION  SIGNATURE\n" + "greet  1        (String name, Long copies=1) -> String\n");

        Run call = cli("function", "call", "greet", "Ada", "2");
        assertThat(call.status()).as(call.err()).isZero();
        assertThat(call.out()).isEqualTo("\"hello Ada hello Ada\"\n");
        Run badArgument = cli("function", "call", "greet", "Ada", "two");
        assertThat(badArgument.status()).isEqualTo(1);
        assertThat(badArgument.err()).isEqualTo("error: argument copies: two is not a Long\n");

        greet.deploy(true);
        Run versions = cli("function", "versions", "greet");
        assertThat(versions.out().lines().toList())
                .hasSize(3)
                .satisfies(lines -> assertThat(lines.get(1)).startsWith("   1        "))
                .satisfies(lines -> assertThat(lines.get(2)).startsWith("*  2        "));

        Run rollback = cli("function", "rollback", "greet", "1");
        assertThat(rollback.out()).isEqualTo("greet: version 1 is current\n");
        assertThat(cli("function", "versions", "greet").out().lines().toList())
                .satisfies(lines -> assertThat(lines.get(1)).startsWith("*  1        "));

        Run noSuchVersion = cli("function", "rollback", "greet", "7");
        assertThat(noSuchVersion.status()).isEqualTo(1);
        assertThat(noSuchVersion.err()).isEqualTo("error: greet has no version 7; its versions are 1, 2\n");
    }
}
