package ai.chalk.compute.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.RemoteExecutionException;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.cli.ServerMain;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sample application as its users run it, each in its own JVM: a standalone server; the application started
 * twice against it in deploy-only mode (the second start reuses every version and uploads nothing); and its
 * functions and scorer called by name from this test's JVM, a third process, after the application has exited.
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class FunctionsAcrossProcessesTest {

    private static final Pattern LISTENING = Pattern.compile("listening on [^ ]+:(\\d+)");

    @TempDir
    Path dir;

    @Test
    void deployedTwiceFromSeparateRunsAndCalledByNameFromAnotherProcess() throws Exception {
        Process server = java(
                dir.resolve("server.log"),
                ServerMain.class.getName(),
                "--port",
                "0",
                "--data-dir",
                dir.resolve("server-data").toString());
        try {
            int port = awaitPort(server, dir.resolve("server.log"));
            String target = "127.0.0.1:" + port;
            // as the README says: a credential from the server's command, exported as CHALK_* variables
            Map<String, String> credential = createCredential();
            Map<String, String> env = new HashMap<>(credential);
            env.put("CHALK_COMPUTE_TARGET", target);

            String first = deployOnly(target, "first", credential);
            assertThat(first)
                    .contains("Chalk functions: 3 deployed, 0 failed")
                    .doesNotContain("Port already in use")
                    .doesNotContainIgnoringCase("tomcat")
                    .containsPattern(": uploaded \\d+ code blob")
                    .as("one function uploads the code, the others find it on the server")
                    .containsOnlyOnce("uploaded");
            try (SandboxClient client = SandboxClient.fromEnv(env)) {
                List<String> firstVersions = versionIds(client);

                String second = deployOnly(target, "second", credential);
                assertThat(second)
                        .contains("Chalk functions: 3 deployed, 0 failed")
                        .containsPattern("✓ price +reused version 1")
                        .as("unchanged code: nothing uploaded")
                        .doesNotContain("uploaded");
                assertThat(versionIds(client)).as("every version reused").isEqualTo(firstVersions);

                // this JVM is neither the application nor the server: it knows the functions by name only
                assertThat(RemoteFunction.fromName(client, "price").call("sku-42", 3))
                        .isEqualTo(29.97);
                assertThat(RemoteFunction.fromName(client, "quote").call("sku-7", 2))
                        .isEqualTo("2 x sku-7 = 49.0 EUR");
                assertThat(RemoteFunction.fromName(client, "priceAccuracy")
                                .callBatch(List.of(new Object[] {29.97, 29.97}, new Object[] {0.0, 29.97})))
                        .containsExactly(1.0, 0.0);
                assertThatThrownBy(
                                () -> RemoteFunction.fromName(client, "price").call("sku-0", 1))
                        .isInstanceOfSatisfying(RemoteExecutionException.class, e -> {
                            assertThat(e.exceptionType()).isEqualTo(IllegalArgumentException.class.getName());
                            assertThat(e.remoteTraceback())
                                    .contains("ai.chalk.compute.sample.Pricing.price(Pricing.java:");
                        });
            }
        } finally {
            server.destroy();
            server.waitFor(30, TimeUnit.SECONDS);
        }
    }

    private List<String> versionIds(SandboxClient client) {
        List<String> ids = new ArrayList<>();
        for (String name : List.of("price", "quote", "priceAccuracy")) {
            List<FunctionVersion> versions = client.functions().versions(name);
            assertThat(versions).as(name).hasSize(1);
            ids.add(versions.get(0).id());
        }
        return ids;
    }

    /** {@code credentials create}, run as a user runs it; its {@code CHALK_*=} lines. */
    private Map<String, String> createCredential() throws Exception {
        Path log = dir.resolve("credentials.log");
        Process create = java(
                log,
                Map.of(),
                ServerMain.class.getName(),
                "credentials",
                "create",
                "--name",
                "sample",
                "--data-dir",
                dir.resolve("server-data").toString());
        assertThat(create.waitFor(60, TimeUnit.SECONDS)).isTrue();
        Map<String, String> vars = new HashMap<>();
        for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
            if (line.startsWith("CHALK_")) {
                vars.put(line.substring(0, line.indexOf('=')), line.substring(line.indexOf('=') + 1));
            }
        }
        assertThat(vars).containsKeys("CHALK_CLIENT_ID", "CHALK_CLIENT_SECRET");
        return vars;
    }

    /**
     * Runs the application until its deploy-only mode exits; returns what it printed. Its web port is taken, as on a
     * busy CI host: a deploy-only run starts no web server, so it does not care.
     */
    private String deployOnly(String target, String run, Map<String, String> env) throws Exception {
        Path log = dir.resolve("app-" + run + ".log");
        try (ServerSocket busy = new ServerSocket(0)) {
            Process app = java(
                    log,
                    env,
                    SampleApplication.class.getName(),
                    "--chalk.compute.target=" + target,
                    "--chalk.compute.functions.deploy-only=true",
                    "--chalk.compute.tui=false",
                    "--server.port=" + busy.getLocalPort());
            return awaitDeployOnly(app, run, log);
        }
    }

    private String awaitDeployOnly(Process app, String run, Path log) throws Exception {
        boolean exited = app.waitFor(3, TimeUnit.MINUTES);
        String output = Files.readString(log, StandardCharsets.UTF_8);
        if (!exited) {
            app.destroyForcibly();
        }
        assertThat(exited)
                .as("the %s run exits by itself; it printed:%n%s", run, output)
                .isTrue();
        assertThat(app.exitValue())
                .as("the %s run's exit status; it printed:%n%s", run, output)
                .isZero();
        return output;
    }

    private static Process java(Path log, String mainClass, String... args) throws IOException {
        return java(log, Map.of(), mainClass, args);
    }

    private static Process java(Path log, Map<String, String> env, String mainClass, String... args)
            throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                mainClass));
        command.addAll(List.of(args));
        ProcessBuilder pb =
                new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        return pb.start();
    }

    private static int awaitPort(Process server, Path log) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline && server.isAlive()) {
            Matcher m = LISTENING.matcher(Files.readString(log, StandardCharsets.UTF_8));
            if (m.find()) {
                return Integer.parseInt(m.group(1));
            }
            Thread.sleep(100);
        }
        throw new AssertionError(
                "the server did not start; it printed:\n" + Files.readString(log, StandardCharsets.UTF_8));
    }
}
