package ai.chalk.compute.function.deploy;

import ai.chalk.compute.progress.BackgroundFailures;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads that deploy in the background for {@link FunctionDeployer#deploy(Class[])}, and the report of their
 * failures nobody looked at. A plain Java program that only deploys would otherwise exit 0 with its functions
 * missing, so at exit the deployments still running are waited for (a program that only deploys ends once its
 * functions are deployed), and each failed deployment whose handle was never awaited is written to {@code stderr}
 * once, as {@link BackgroundFailures} writes every unobserved failure, and the JVM exits with status 1, whatever the
 * logging configuration.
 */
final class BackgroundDeployments {

    private static final AtomicInteger threads = new AtomicInteger();

    /** Daemon threads: a deployment still running never keeps the program from exiting. */
    static final ExecutorService EXECUTOR = Executors.newCachedThreadPool(task -> {
        Thread thread = new Thread(task, "chalk-deploy-" + threads.incrementAndGet());
        thread.setDaemon(true);
        return thread;
    });

    private static final List<DeployedFunction> watched = new ArrayList<>();
    private static boolean hookInstalled;

    private BackgroundDeployments() {}

    /** Watches a handle so that its failure is reported at exit unless it was observed. */
    static synchronized void watch(DeployedFunction function) {
        watched.add(function);
        // a deployment that succeeded has nothing to report: a long-running program deploying often keeps no handle
        function.deploymentUnobserved().thenRun(() -> forget(function));
        if (!hookInstalled) {
            hookInstalled = true;
            Runtime.getRuntime().addShutdownHook(new Thread(BackgroundDeployments::atExit, "chalk-deploy-report"));
        }
    }

    private static synchronized void forget(DeployedFunction function) {
        watched.remove(function);
    }

    private static void atExit() {
        List<DeployedFunction> running;
        synchronized (BackgroundDeployments.class) {
            running = List.copyOf(watched);
        }
        for (DeployedFunction function : running) {
            function.awaitQuietly();
        }
        if (report(BackgroundFailures.shared()) > 0) {
            System.err.flush();
            // a shutdown hook cannot change the exit status otherwise
            Runtime.getRuntime().halt(1);
        }
    }

    /**
     * Writes each unobserved failure once.
     *
     * @return how many were written
     */
    static int report(BackgroundFailures reporter) {
        List<DeployedFunction> failed;
        synchronized (BackgroundDeployments.class) {
            failed =
                    watched.stream().filter(DeployedFunction::unobservedFailure).toList();
            watched.removeAll(failed);
        }
        for (DeployedFunction function : failed) {
            reporter.report(function.operation(), function.failure());
        }
        return failed.size();
    }
}
