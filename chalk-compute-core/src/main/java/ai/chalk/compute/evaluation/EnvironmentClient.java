package ai.chalk.compute.evaluation;

import ai.chalk.compute.sandbox.SandboxClient;
import org.jspecify.annotations.Nullable;

/**
 * The client of the server this process's environment names, for the static {@code EvaluationSuite.create} and
 * {@code Evaluation.create}, as the SDK's module-level functions use a default client: connected on first use and
 * then shared for the life of the process, because the evaluations and runs it returns keep calling through it.
 */
final class EnvironmentClient {

    private static @Nullable EvaluationClient client;

    private EnvironmentClient() {}

    static synchronized EvaluationClient evaluations() {
        if (client == null) {
            client = EvaluationClient.of(SandboxClient.fromEnv());
        }
        return client;
    }
}
