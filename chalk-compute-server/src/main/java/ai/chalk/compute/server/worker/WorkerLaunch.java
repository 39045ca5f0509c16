package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.sandbox.NetworkGrant;
import ai.chalk.compute.server.sandbox.SandboxIdentities;
import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;

/**
 * How to start the replicas of one function revision.
 *
 * @param revisionId   the scaling-group revision they run
 * @param code         the materialised code snapshot
 * @param functions    the {@code chalk_compute.functions} option ({@code name=Class#method,...})
 * @param worker       the {@code chalk_compute.worker} option ({@code plain} or {@code spring:Main})
 * @param env          the function's environment
 * @param readyTimeout how long a replica may take to report SERVING
 * @param maxConcurrent calls a replica runs at once (0: no limit); the worker enforces it too, so a call the server
 *                      gave up on (timed out) still holds its place until the function returns
 * @param image        the function's own image, its replicas' root and Java; empty for the server's worker image
 * @param limits       each replica's cpu and memory
 * @param environment  the function's environment: its replicas' calls to the server act there
 * @param workload     who the replicas are to the server and to third parties (their token's subject), e.g.
 *                     {@code function:<id>/v3}
 * @param secretEnv    the variables the function's secret references give its replicas, read as each one starts (so a
 *                     replica started after a secret changed has the new value); never kept in the launch itself
 * @param network      the network each replica gets from the function's network policy, read as each one starts (its
 *                     header secrets, like {@code secretEnv}, are never kept in the launch)
 */
public record WorkerLaunch(
        String revisionId,
        CodeSnapshots.Snapshot code,
        String functions,
        String worker,
        Map<String, String> env,
        Duration readyTimeout,
        int maxConcurrent,
        String image,
        SandboxSpec.ResourceLimits limits,
        String environment,
        String workload,
        Supplier<Map<String, String>> secretEnv,
        Supplier<NetworkGrant> network) {

    /** Names the environment's variables without their values; the secrets are never read here. */
    @Override
    public String toString() {
        return "WorkerLaunch[revisionId=" + revisionId + ", functions=" + functions + ", env=" + env.keySet()
                + ", image=" + image + ", limits=" + limits + ", environment=" + environment + ", workload=" + workload
                + "]";
    }

    /** The protocol's worker main class. */
    public static final String MAIN_CLASS = "ai.chalk.compute.function.worker.FunctionWorker";
    /** Where the code is bound in a replica. */
    public static final String CODE_MOUNT = "/chalk/code";
    /** Where a replica's own directory (its socket) is bound. */
    public static final String RUN_MOUNT = "/chalk/run";
    /** Where the directory of the server's socket for replicas is bound. */
    public static final String SERVER_MOUNT = SandboxIdentities.SERVER_MOUNT;
    /** The file name of the server's socket for replicas. */
    public static final String SERVER_SOCKET_NAME = SandboxIdentities.SERVER_SOCKET_NAME;
    /** The socket a worker serves on, in its run directory ({@link #RUN_MOUNT} inside its sandbox). */
    public static final String WORKER_SOCKET_NAME = "worker.sock";
    /** The server's socket as a replica sees it, a gRPC target (its {@code CHALK_COMPUTE_TARGET}). */
    public static final String SERVER_SOCKET = SandboxIdentities.SERVER_SOCKET;
    /** Where a replica's identity directory (its rotating token) is bound, read-only. */
    public static final String IDENTITY_MOUNT = SandboxIdentities.IDENTITY_MOUNT;

    public WorkerLaunch {
        env = Map.copyOf(env);
    }

    /** The names of the functions the replicas serve, from {@link #functions()}. */
    public java.util.List<String> functionNames() {
        return java.util.Arrays.stream(functions.split(","))
                .map(String::trim)
                .filter(e -> !e.isEmpty())
                .map(e -> e.contains("=") ? e.substring(0, e.indexOf('=')) : e)
                .toList();
    }
}
