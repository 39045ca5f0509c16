package ai.chalk.compute.server.grpc;

import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Bounds on what a client may send, so one request cannot exhaust the server, with errors that
 * say which limit was hit.
 */
public final class RequestLimits {

    /** Most environment variables one sandbox or exec may set. */
    public static final int MAX_ENV_ENTRIES = 1024;
    /** Most bytes of environment (names and values) one sandbox or exec may set. */
    public static final int MAX_ENV_BYTES = 128 * 1024;

    private RequestLimits() {}

    /** Checks an environment map: sizes, and names a process can actually receive. */
    public static void checkEnv(String field, Map<String, String> env) {
        if (env.size() > MAX_ENV_ENTRIES) {
            throw Status.INVALID_ARGUMENT
                    .withDescription(
                            field + " has " + env.size() + " variables; at most " + MAX_ENV_ENTRIES + " are allowed")
                    .asRuntimeException();
        }
        long bytes = 0;
        for (Map.Entry<String, String> e : env.entrySet()) {
            String name = e.getKey();
            if (name.isEmpty() || name.indexOf('=') >= 0 || name.indexOf('\0') >= 0) {
                throw Status.INVALID_ARGUMENT
                        .withDescription(field + " has an invalid variable name \"" + name
                                + "\": names must be non-empty and contain no '=' or NUL")
                        .asRuntimeException();
            }
            if (e.getValue().indexOf('\0') >= 0) {
                throw Status.INVALID_ARGUMENT
                        .withDescription(field + " variable " + name + " contains a NUL character")
                        .asRuntimeException();
            }
            bytes += name.getBytes(StandardCharsets.UTF_8).length
                    + e.getValue().getBytes(StandardCharsets.UTF_8).length
                    + 2;
        }
        if (bytes > MAX_ENV_BYTES) {
            throw Status.INVALID_ARGUMENT
                    .withDescription(field + " is " + bytes + " bytes; at most " + MAX_ENV_BYTES
                            + " bytes of environment are allowed")
                    .asRuntimeException();
        }
    }

    /** Checks a working directory: absolute and free of NUL. */
    public static void checkWorkdir(String field, String workdir) {
        if (!workdir.startsWith("/") || workdir.indexOf('\0') >= 0) {
            throw Status.INVALID_ARGUMENT
                    .withDescription(
                            field + " \"" + workdir + "\" must be an absolute path inside the sandbox, e.g. /workspace")
                    .asRuntimeException();
        }
    }
}
