package ai.chalk.compute.sample;

import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsDeployment;
import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.error.RemoteExecutionException;
import ai.chalk.compute.evaluation.Evaluation;
import ai.chalk.compute.evaluation.EvaluationClient;
import ai.chalk.compute.evaluation.EvaluationRun;
import ai.chalk.compute.evaluation.Scorers;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressGroup;
import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecProcess;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.Signal;
import ai.chalk.compute.sql.SQLClient;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;

/**
 * What a newcomer does first: create a sandbox, run a command, stream a build, talk to a shell
 * through stdin, stop a process with a signal, and terminate; then call the application's own
 * functions ({@link Pricing}) by name once the starter has deployed them, look at the actuator
 * endpoints, query a dataset with SQL and evaluate the {@code price} function with built-in scorers and its own. Prints what happens to stdout; the SDK's progress display shows the lifecycle on stderr.
 * Not run in a function worker (which boots this application to serve {@link Pricing}) nor when the
 * application only deploys its functions ({@code chalk.compute.functions.deploy-only=true}).
 */
@Component
@ConditionalOnBooleanProperty(
        name = {"chalk.compute.functions.worker", "chalk.compute.functions.deploy-only"},
        havingValue = false,
        matchIfMissing = true)
public class SandboxTour implements CommandLineRunner {

    private final SandboxClient client;
    private final SQLClient sql;
    private final EvaluationClient evaluations;
    private final ProgressDisplay progress;
    private final Environment environment;
    private final ObjectProvider<ChalkFunctionsDeployment> deployment;
    private final ChalkFunctions functions;
    private final PrintStream out;

    public SandboxTour(
            SandboxClient client,
            SQLClient sql,
            EvaluationClient evaluations,
            ProgressDisplay progress,
            Environment environment,
            ObjectProvider<ChalkFunctionsDeployment> deployment,
            ChalkFunctions functions) {
        this.client = client;
        this.sql = sql;
        this.evaluations = evaluations;
        this.progress = progress;
        this.environment = environment;
        this.deployment = deployment;
        this.functions = functions;
        this.out = System.out;
    }

    @Override
    public void run(String... args) throws Exception {
        try (ProgressGroup lifecycle = progress.open("Sandbox \"sample\"")) {
            lifecycle.step("Creating sandbox");
            Sandbox sandbox = client.create(
                    Sandbox.builder().name("sample").cpu("1").memory("512Mi").env("GREETING", "hello"));
            lifecycle.completed("Sandbox " + sandbox.id() + " running");
            out.println(
                    "1. created sandbox " + sandbox.id() + " (" + sandbox.info().state() + ")");
            actuator("/actuator/chalkcompute", "   the sandboxes, as /actuator/chalkcompute lists them: ");
            try {
                lifecycle.step("Running a command");
                ExecResult hello = sandbox.exec("sh", "-c", "echo \"$GREETING from $(hostname), pid $$\"");
                out.println("2. exec: " + hello.stdoutText().strip() + " (exit code " + hello.exitCode() + ")");

                lifecycle.step("Streaming a build");
                out.println("3. streaming a build:");
                try (ExecStream build = sandbox.execStream(Command.of(
                                "sh",
                                "-c",
                                "for step in fetch compile test package; do echo \"   [build] $step\"; sleep 0.2; done; echo '   [build] warning: 1 deprecation' >&2")
                        .workdir("/workspace"))) {
                    for (ExecEvent event : build) {
                        if (event instanceof ExecEvent.Stdout o) {
                            out.print(o.stdoutText());
                        } else if (event instanceof ExecEvent.Stderr e) {
                            out.print(e.stderrText());
                        } else if (event instanceof ExecEvent.Exited x) {
                            out.println("   build finished: exit code "
                                    + x.exitCode().orElse(-1));
                        }
                    }
                }

                lifecycle.step("Driving a shell through stdin");
                out.println("4. an interactive shell through stdin:");
                try (ExecProcess shell = sandbox.execStart("sh")) {
                    shell.writeStdin("cd /workspace && echo 'notes' > todo.txt\n");
                    shell.writeStdin(
                            "echo \"   files: $(ls)\"; echo \"   processes: $(ls /proc | grep -c '^[0-9]')\"\n");
                    shell.writeStdin("exit 0\n");
                    shell.closeStdin();
                    ExecResult result = shell.waitFor();
                    out.print(result.stdoutText());
                    out.println("   shell exited with " + result.exitCode());
                }

                lifecycle.step("Stopping a process with SIGTERM");
                out.println("5. stopping a process with a signal:");
                try (ExecProcess sleeper = sandbox.execStart("sleep", "300")) {
                    out.println("   started sleep 300 as pid " + sleeper.pid() + " inside the sandbox");
                    sleeper.sendSignal(Signal.TERM);
                    ExecResult stopped = sleeper.waitFor(Duration.ofSeconds(10))
                            .orElseThrow(() -> new IllegalStateException("sleep did not stop within 10 s of SIGTERM"));
                    out.println("   stopped by signal " + stopped.signal().orElse(-1) + " (exit code "
                            + stopped.exitCode() + ")");
                }
            } finally {
                lifecycle.step("Terminating");
                sandbox.terminate();
                out.println("6. terminated: " + sandbox.refresh().state());
            }
            lifecycle.succeed("Terminated");
        }
        callFunctions();
        actuator("/actuator/health/chalkCompute", "8. health, as /actuator/health/chalkCompute shows it: ");
        uploadDataset();
        evaluatePricing();
        if (environment.getProperty("sample.keep-running", Boolean.class, false)) {
            out.println("   serving on http://localhost:" + environment.getProperty("local.server.port")
                    + "/actuator/health and /actuator/chalkcompute until stopped (Ctrl-C)");
        } else {
            out.println(
                    "   (run with --sample.keep-running=true to browse /actuator/health and /actuator/chalkcompute)");
        }
    }

    /** A small CSV uploaded as a dataset (stored on the server as Parquet, one revision per upload), queried with SQL. */
    private void uploadDataset() throws IOException {
        Path csv = Files.createTempFile("sales-", ".csv");
        try {
            Files.writeString(csv, "sku,units,price\nsku-42,3,9.99\nsku-7,2,24.50\nsku-42,1,9.99\n");
            Dataset sales = client.datasets().upload("sales", csv);
            out.println("9. a dataset uploaded from CSV: " + sales.name() + ", " + sales.rows() + " rows ("
                    + sales.status() + "), columns "
                    + sales.latest().orElseThrow().columns().stream()
                            .map(c -> c.name() + " " + c.type())
                            .toList());
            out.println("   queried with SQL: "
                    + sql.query("SELECT sku, round(sum(units * price), 2) AS revenue FROM chalk.datasets.sales"
                                    + " GROUP BY sku ORDER BY sku")
                            .rows());
        } finally {
            Files.deleteIfExists(csv);
        }
    }

    /**
     * Evaluates {@link Pricing#price} on a small CSV of order lines and their expected prices, with two built-in scorers
     * and the application's own {@code priceAccuracy} scorer (given by name: its background deployment is waited for).
     * One line expects a wrong price, and one names an unknown sku, so its task fails: the run records that row as
     * failed and goes on.
     */
    private void evaluatePricing() throws IOException {
        Path csv = Files.createTempFile("price-goldens-", ".csv");
        try {
            Files.writeString(
                    csv,
                    "sku,quantity,expected\nsku-42,3,29.97\nsku-7,2,49.00\nsku-42,1,9.99\nsku-7,1,24.00\nsku-0,1,5.00\n");
            client.datasets().upload("price_goldens", csv);
            Evaluation evaluation = evaluations.create(
                    "Pricing",
                    "price_goldens",
                    "price",
                    List.of(
                            Scorers.numericClose(0.01).inputs("output", "expected"),
                            Scorers.exactMatch().inputs("output", "expected"),
                            "priceAccuracy"),
                    null,
                    Map.of("owner", "sample"));
            EvaluationRun run = evaluation.run(Map.of("git_sha", "sample")).await(Duration.ofMinutes(5));
            out.println("10. an evaluation of price on " + evaluation.scorers().size() + " scorers: run " + run.status()
                    + run.errorMessage().map(m -> " (" + m + ")").orElse(""));
            run.scoreSummary()
                    .ifPresent(summary -> summary.format().lines().forEach(line -> out.println("   " + line)));
            run.resultTable()
                    .ifPresent(table -> out.println("   failed rows, from the result dataset: "
                            + sql.query("SELECT sku, error FROM " + table + " WHERE error IS NOT NULL")
                                    .rows()));
        } finally {
            Files.deleteIfExists(csv);
        }
    }

    /** Waits for the background deployment of {@link Pricing}'s functions, then calls them by name as any process could. */
    private void callFunctions() {
        out.println("7. functions, deployed in the background and called by name:");
        ChalkFunctionsDeployment running = deployment.getIfAvailable();
        if (running == null || !running.awaitDeployments(Duration.ofMinutes(3))) {
            out.println("   not deployed (deployment switched off or unfinished)");
            return;
        }
        out.println("   "
                + String.join(
                        ", ",
                        functions.functions().stream()
                                .map(f -> f.name() + " "
                                        + (f.version() == null
                                                ? f.status() + ": " + f.error()
                                                : "version " + f.version()))
                                .sorted()
                                .toList()));
        RemoteFunction price = RemoteFunction.fromName(client, "price");
        long start = System.nanoTime();
        Object total = price.call("sku-42", 3);
        out.printf(
                "   price(\"sku-42\", 3) = %s   (first call: a worker started in %.1f s)%n",
                total, (System.nanoTime() - start) / 1e9);
        long[] warm = new long[50];
        for (int i = 0; i < warm.length; i++) {
            start = System.nanoTime();
            price.call("sku-42", 3);
            warm[i] = System.nanoTime() - start;
        }
        java.util.Arrays.sort(warm);
        // a worker just started, still compiling: FunctionCallBenchmark measures a warmed-up one
        out.printf("   price(\"sku-42\", 3) %d more times: median %.1f ms%n", warm.length, warm[warm.length / 2] / 1e6);
        out.println("   quote(\"sku-7\", 2) = "
                + RemoteFunction.fromName(client, "quote").call("sku-7", 2));
        try {
            RemoteFunction.fromName(client, "price").call("sku-0", 1);
        } catch (RemoteExecutionException e) {
            out.println("   price(\"sku-0\", 1) failed remotely: " + e.exceptionType() + ": " + e.remoteMessage());
        }
    }

    /** Prints what an actuator endpoint of this application answers, when it serves HTTP. */
    private void actuator(String path, String label) throws IOException, InterruptedException {
        String port = environment.getProperty("local.server.port");
        if (port == null) {
            return;
        }
        HttpClient http =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        out.println(label + response.body());
    }
}
