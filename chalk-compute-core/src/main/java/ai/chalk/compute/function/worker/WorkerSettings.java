package ai.chalk.compute.function.worker;

import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.connection.ConnectionSettings;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a worker is told by its environment.
 *
 * @param socket    where to serve ({@code CHALK_WORKER_SOCKET})
 * @param functions the functions to serve ({@code CHALK_WORKER_FUNCTIONS})
 * @param mode      how to load them ({@code CHALK_WORKER}): {@code plain}, or {@code spring:fully.qualified.MainClass}
 * @param workerId  this replica's id, for messages ({@code CHALK_WORKER_ID}); empty when not given
 * @param serverTarget the server that runs the worker, as a gRPC target ({@code CHALK_COMPUTE_TARGET}, a Unix
 *                     socket bound into the replica); functions reach it through a {@code SandboxClient}
 * @param maxConcurrent calls run at once ({@code CHALK_WORKER_MAX_CONCURRENT}); 0 for no limit
 * @param identityTokenFile the token the server rotates for this replica ({@code CHALK_WEB_IDENTITY_TOKEN_FILE}):
 *                          calls to {@code serverTarget} show it, and act in the function's environment
 */
public record WorkerSettings(
        Path socket,
        List<FunctionBinding> functions,
        String mode,
        String workerId,
        Optional<String> serverTarget,
        int maxConcurrent,
        Optional<Path> identityTokenFile) {

    /** The environment variable naming the socket. */
    public static final String SOCKET = "CHALK_WORKER_SOCKET";
    /** The environment variable listing the functions. */
    public static final String FUNCTIONS = "CHALK_WORKER_FUNCTIONS";
    /** The environment variable naming the mode. */
    public static final String MODE = "CHALK_WORKER";
    /** The environment variable holding the replica's id. */
    public static final String ID = "CHALK_WORKER_ID";
    /** The environment variable limiting how many calls run at once. */
    public static final String MAX_CONCURRENT = "CHALK_WORKER_MAX_CONCURRENT";

    /** Checks for nulls and copies the list. */
    public WorkerSettings {
        Objects.requireNonNull(socket, "socket");
        functions = List.copyOf(functions);
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(workerId, "workerId");
        Objects.requireNonNull(serverTarget, "serverTarget");
        Objects.requireNonNull(identityTokenFile, "identityTokenFile");
        if (maxConcurrent < 0) {
            throw new IllegalArgumentException(MAX_CONCURRENT + " must be 0 (no limit) or more, got " + maxConcurrent);
        }
    }

    /** Settings of a worker with no connection to a server (its functions need none). */
    public WorkerSettings(Path socket, List<FunctionBinding> functions, String mode, String workerId) {
        this(socket, functions, mode, workerId, Optional.empty(), 0, Optional.empty());
    }

    /**
     * Reads the settings from environment variables; {@code CHALK_WORKER} defaults to {@code plain}.
     *
     * @param env the environment, such as {@code System.getenv()}
     * @return the settings
     * @throws IllegalArgumentException when {@code CHALK_WORKER_SOCKET} or {@code CHALK_WORKER_FUNCTIONS} is missing or malformed
     */
    public static WorkerSettings fromEnv(Map<String, String> env) {
        String socket = env.get(SOCKET);
        if (socket == null || socket.isBlank()) {
            throw new IllegalArgumentException(SOCKET + " is not set: it names the Unix socket the worker serves on");
        }
        List<FunctionBinding> functions;
        try {
            functions = FunctionBinding.parseList(env.get(FUNCTIONS));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(FUNCTIONS + ": " + e.getMessage(), e);
        }
        String mode = env.getOrDefault(MODE, "");
        String target = env.getOrDefault(ConnectionSettings.ENV_TARGET, "");
        int maxConcurrent;
        try {
            maxConcurrent =
                    Integer.parseInt(env.getOrDefault(MAX_CONCURRENT, "0").trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(MAX_CONCURRENT + " is not a number: " + env.get(MAX_CONCURRENT), e);
        }
        String tokenFile = env.getOrDefault(ChalkCredentials.ENV_TOKEN_FILE, "");
        return new WorkerSettings(
                Path.of(socket),
                functions,
                mode.isBlank() ? "plain" : mode.trim(),
                env.getOrDefault(ID, ""),
                target.isBlank() ? Optional.empty() : Optional.of(target.trim()),
                maxConcurrent,
                tokenFile.isBlank() ? Optional.empty() : Optional.of(Path.of(tokenFile.trim())));
    }
}
