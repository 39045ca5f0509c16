package ai.chalk.compute.sample;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.autoconfigure.ChalkComputeChannel;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The sample app runs its tour on the embedded server, as the README's run command does, and serves
 * the actuator endpoints over HTTP.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = "chalk.compute.tui=true")
@ExtendWith(OutputCaptureExtension.class)
class SampleApplicationTest {

    @Autowired
    SandboxClient client;

    @Autowired
    EmbeddedComputeServer embedded;

    @Autowired
    ChalkComputeChannel channel;

    @LocalServerPort
    int port;

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void tourRunsOnTheEmbeddedServer(CapturedOutput output) {
        assertThat(embedded.isRunning()).isTrue();
        assertThat(embedded.port()).as("no TCP port unless asked for").isEmpty();
        assertThat(channel.isEmbedded()).isTrue();
        String printed = output.getOut();
        assertThat(printed).contains("1. created sandbox").contains("(RUNNING)");
        assertThat(printed)
                .contains("as /actuator/chalkcompute lists them: {\"server\":\"embedded\",\"reachable\":true,"
                        + "\"sandboxes\":[{\"id\":\"");
        assertThat(printed).containsPattern("2\\. exec: hello from \\S+, pid \\d+ \\(exit code 0\\)");
        assertThat(printed).contains("[build] fetch", "[build] package", "build finished: exit code 0");
        assertThat(printed).contains("files: todo.txt", "shell exited with 0");
        assertThat(printed).contains("stopped by signal 15 (exit code 143)");
        assertThat(printed).contains("6. terminated: TERMINATED");
        assertThat(printed)
                .contains(
                        "9. a dataset uploaded from CSV: sales, 3 rows (COMPLETED), columns [sku VARCHAR, units BIGINT,"
                                + " price DOUBLE]",
                        "   queried with SQL: [{sku=sku-42, revenue=39.96}, {sku=sku-7, revenue=49.0}]");
        assertThat(printed)
                .contains(
                        "7. functions, deployed in the background and called by name:",
                        "   price version 1, priceAccuracy version 1, quote version 1",
                        "   price(\"sku-42\", 3) = 29.97",
                        "   quote(\"sku-7\", 2) = 2 x sku-7 = 49.0 EUR",
                        "   price(\"sku-0\", 1) failed remotely: java.lang.IllegalArgumentException: no price for sku-0");
        // sku-7 x 1 expects 24.00 (the price is 24.5) and sku-0 has no price: that row fails, the run goes on
        assertThat(printed)
                .contains(
                        "10. an evaluation of price on 3 scorers: run SUCCEEDED",
                        "   numeric_close            0.600",
                        "   exact_match              0.600",
                        "   priceAccuracy            0.758",
                        "   failed_rows              1",
                        "   failed rows, from the result dataset: [{sku=sku-0, error=task: java.lang.IllegalArgumentException:")
                .containsPattern("failed rows, from the result dataset: .*no price for sku-0");
        assertThat(printed)
                .containsPattern("8\\. health, as /actuator/health/chalkCompute shows it: \\{.*\"status\":\"UP\"");
        assertThat(client.list()).isEmpty();
    }

    @Test
    void theLifecycleShowsAsProgressOnStderrOnly(CapturedOutput output) {
        assertThat(output.getErr())
                .contains(
                        "Sandbox \"sample\"",
                        "│ › Creating sandbox",
                        "│ › Streaming a build",
                        "│ › Stopping a process with SIGTERM",
                        "└ ✓ Terminated");
        assertThat(output.getOut()).doesNotContain("│ ›");
        // shown on the display, so not logged at INFO too: each step once on the console
        assertThat(output.getOut()).doesNotContain("progress.ProgressDisplay");
    }

    @Test
    void theChalkFunctionsEndpointIsExposed() throws Exception {
        String functions = get("/actuator/chalkfunctions");
        assertThat(functions)
                .contains("\"name\":\"price\"", "\"name\":\"quote\"", "\"name\":\"priceAccuracy\"")
                .contains("\"status\":\"DEPLOYED\"");
    }

    @Test
    void healthShowsTheEmbeddedServerWithDetails() throws Exception {
        String health = get("/actuator/health");
        assertThat(health)
                .contains("\"chalkCompute\":{")
                .contains("\"status\":\"UP\"")
                .contains("\"server\":\"embedded\"")
                .contains("\"runtime\":\"local\"")
                .contains("\"isolation\":\"" + embedded.isolation().level() + "\"")
                .contains("\"sandboxes\":{")
                .contains("\"TERMINATED\":1");
    }

    @Test
    void theChalkComputeEndpointListsRunningSandboxes() throws Exception {
        Sandbox sandbox = client.create(Sandbox.builder().name("listed-over-http"));
        try {
            String listed = get("/actuator/chalkcompute");
            assertThat(listed)
                    .startsWith("{\"server\":\"embedded\",\"reachable\":true")
                    .contains(
                            "\"id\":\"" + sandbox.id() + "\"",
                            "\"name\":\"listed-over-http\"",
                            "\"state\":\"RUNNING\"",
                            "\"createdAt\":\"");
        } finally {
            sandbox.terminate();
        }
        assertThat(get("/actuator/chalkcompute"))
                .startsWith("{\"server\":\"embedded\",\"reachable\":true,\"sandboxes\":[]")
                .doesNotContain("\"error\":\"");
    }

    private String get(String path) throws Exception {
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(path).isEqualTo(200);
        return response.body();
    }
}
