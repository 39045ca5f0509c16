package ai.chalk.compute.autoconfigure.function;

import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.IntConsumer;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationListener;

/**
 * The deploy-only run, for CI ({@code chalk.compute.functions.deploy-only=true}): once the application is ready it
 * waits for every function's deployment, prints a summary on stderr (one line per function) and exits: status 0
 * when every function is deployed, 1 when any failed (its signature included) or did not finish within
 * {@code chalk.compute.functions.wait-timeout} (a server that is not up yet is waited for, retrying, until then).
 * <pre>
 * Chalk functions: 2 deployed, 1 failed
 *   ✓ greet          version 3
 *   ✓ fraudScore     reused version 1
 *   ✗ bad            com.acme.Fns.bad(Object x): parameter 'x' has type Object, which has no Arrow mapping; ...
 * </pre>
 */
public class ChalkFunctionsDeployOnly implements ApplicationListener<ApplicationReadyEvent> {

    private final ChalkFunctionsDeployment deployment;
    private final ChalkFunctions functions;
    private final Duration timeout;
    private final PrintStream out;
    private final IntConsumer exit;

    /**
     * @param deployment the background deployment to wait for
     * @param functions  the functions to summarise
     * @param timeout    how long to wait at most
     * @param out        where the summary goes (stderr: stdout belongs to the application)
     * @param exit       ends the JVM with a status, such as {@code System::exit}
     */
    public ChalkFunctionsDeployOnly(
            ChalkFunctionsDeployment deployment,
            ChalkFunctions functions,
            Duration timeout,
            PrintStream out,
            IntConsumer exit) {
        this.deployment = Objects.requireNonNull(deployment, "deployment");
        this.functions = Objects.requireNonNull(functions, "functions");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.out = Objects.requireNonNull(out, "out");
        this.exit = Objects.requireNonNull(exit, "exit");
    }

    @Override
    public void onApplicationEvent(ApplicationReadyEvent event) {
        boolean finished = deployment.awaitDeployments(timeout);
        int status = summarise(finished);
        // closes the context (and the embedded server, stopping its workers) before the JVM ends
        exit.accept(SpringApplication.exit(event.getApplicationContext(), () -> status));
    }

    private int summarise(boolean finished) {
        List<FunctionDeploymentState> all = functions.functions();
        long deployed = all.stream()
                .filter(f -> f.status() == FunctionDeploymentState.Status.DEPLOYED)
                .count();
        long failed = all.stream()
                .filter(f -> f.status() == FunctionDeploymentState.Status.FAILED)
                .count();
        long unfinished = all.size() - deployed - failed;
        StringBuilder summary = new StringBuilder("Chalk functions: ")
                .append(deployed)
                .append(" deployed, ")
                .append(failed)
                .append(" failed");
        if (unfinished > 0) {
            summary.append(", ")
                    .append(unfinished)
                    .append(" not finished within ")
                    .append(timeout);
        }
        out.println(summary);
        int width = all.stream().mapToInt(f -> f.name().length()).max().orElse(0);
        for (FunctionDeploymentState f : all) {
            String mark = switch (f.status()) {
                case DEPLOYED -> "✓";
                case FAILED -> "✗";
                case DISCOVERED, DEPLOYING, RETRYING -> "…";
            };
            String detail = switch (f.status()) {
                case DEPLOYED -> (f.reused() ? "reused version " : "version ") + f.version();
                case FAILED -> f.error();
                case RETRYING -> "not finished after " + f.attempts() + " tries: " + f.error();
                case DISCOVERED, DEPLOYING -> "not finished";
            };
            out.println("  " + mark + " " + String.format("%-" + Math.max(width, 1) + "s", f.name()) + "  " + detail);
        }
        out.flush();
        return finished && deployed == all.size() ? 0 : 1;
    }
}
