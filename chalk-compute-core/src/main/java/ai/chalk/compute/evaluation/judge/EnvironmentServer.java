package ai.chalk.compute.evaluation.judge;

import ai.chalk.compute.sandbox.SandboxClient;
import io.grpc.Channel;
import io.grpc.Status;
import org.jspecify.annotations.Nullable;

/**
 * The server this process's environment names ({@code CHALK_API_SERVER}, credentials or a workload identity, as
 * {@link SandboxClient#fromEnv()} reads them), connected on first use and then shared, whose AI router judges without
 * a provider of their own call. A failed connection is not remembered: the next row tries again.
 */
final class EnvironmentServer {

    private static @Nullable SandboxClient client;

    private EnvironmentServer() {}

    static synchronized Channel channel() {
        if (client == null) {
            try {
                client = SandboxClient.fromEnv();
            } catch (RuntimeException | Error e) {
                throw new JudgeException(
                        Status.Code.FAILED_PRECONDITION,
                        "this judge names no provider, so it "
                                + "calls the AI router of the server this environment names, but no client could be made ("
                                + e + "); give the judge router(client), or apiKey(...) and baseUrl(...)");
            }
        }
        return client.channel();
    }
}
