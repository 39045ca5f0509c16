package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.auth.WorkloadTokens;
import ai.chalk.compute.server.runtime.SandboxSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The workload identity of sandboxes created with {@code chalk_workload_identity}: a token the server rotates, bound
 * read-only at {@value #IDENTITY_MOUNT}, and the server's socket for deployed code at {@value #SERVER_MOUNT}, so that
 * the SDK inside works with no configuration ({@code CHALK_COMPUTE_TARGET}, {@code CHALK_WEB_IDENTITY_TOKEN_FILE}).
 * Its calls act in the sandbox's environment with the rights of deployed code, and no caller credentials are copied
 * into it.
 */
public final class SandboxIdentities {

    /** Where a workload's identity directory (its rotating token) is bound, read-only. */
    public static final String IDENTITY_MOUNT = "/chalk/identity";
    /** Where the directory of the server's socket for deployed code is bound, read-only. */
    public static final String SERVER_MOUNT = "/chalk/server";
    /** The file name of that socket. */
    public static final String SERVER_SOCKET_NAME = "server.sock";
    /** The socket as a workload sees it, a gRPC target. */
    public static final String SERVER_SOCKET = "unix://" + SERVER_MOUNT + "/" + SERVER_SOCKET_NAME;

    private final WorkloadTokens tokens;
    private final Supplier<Optional<Path>> serverSocketDir;

    /**
     * @param serverSocketDir the directory of the server's socket for deployed code, once it serves (empty where Unix
     *                        sockets cannot be served: the sandbox then gets its token, and no way to the server)
     */
    public SandboxIdentities(WorkloadTokens tokens, Supplier<Optional<Path>> serverSocketDir) {
        this.tokens = tokens;
        this.serverSocketDir = serverSocketDir;
    }

    /**
     * What a sandbox with workload identity gets.
     *
     * @param bindings its identity directory and the server's socket directory, both read-only
     * @param env      where the SDK inside finds them
     */
    public record Grant(List<SandboxSpec.VolumeBinding> bindings, Map<String, String> env) {

        /** Names the variables without their values. */
        @Override
        public String toString() {
            return "Grant[bindings=" + bindings + ", env=" + env.keySet() + "]";
        }
    }

    /** Issues the identity of sandbox {@code id} of {@code environment}; {@link #release} it when the sandbox ends. */
    Grant grant(String id, String environment) {
        Path identity = tokens.issue(id, new Caller(environment, "sandbox:" + id, Caller.Kind.WORKLOAD));
        List<SandboxSpec.VolumeBinding> bindings = new ArrayList<>();
        bindings.add(new SandboxSpec.VolumeBinding(identity, IDENTITY_MOUNT, true));
        Map<String, String> env = new java.util.LinkedHashMap<>();
        env.put("CHALK_WEB_IDENTITY_TOKEN_FILE", IDENTITY_MOUNT + "/" + WorkloadTokens.FILE_NAME);
        Optional<Path> socketDir = serverSocketDir.get();
        // read-only still lets the sandbox connect: a socket is not written through its file system
        socketDir.ifPresent(dir -> {
            bindings.add(new SandboxSpec.VolumeBinding(dir, SERVER_MOUNT, true));
            env.put("CHALK_COMPUTE_TARGET", SERVER_SOCKET);
        });
        return new Grant(List.copyOf(bindings), Map.copyOf(env));
    }

    /** Stops rotating the token of sandbox {@code id} and removes it. */
    void release(String id) {
        tokens.release(id);
    }
}
