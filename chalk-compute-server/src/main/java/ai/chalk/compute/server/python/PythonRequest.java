package ai.chalk.compute.server.python;

import ai.chalk.compute.proto.sandbox.v1.ExecutePythonSpec;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.exec.ProcessRequests;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * An {@code ExecutePythonSpec} checked: what the snippet runs with.
 *
 * @param artifactLimit the largest artifact passed on: the call's {@code max_artifact_bytes}, at most the server's
 *                      {@link DriverFrames#MAX_ARTIFACT_BYTES}, which is also the default
 */
record PythonRequest(
        String sandboxId,
        String source,
        Optional<Duration> timeout,
        Map<String, String> env,
        Optional<String> workdir,
        boolean captureCharts,
        long artifactLimit) {

    PythonRequest {
        env = Map.copyOf(env);
    }

    /** Names the environment's variables without their values, which may be secrets; the source by its size. */
    @Override
    public String toString() {
        return "PythonRequest[sandboxId=" + sandboxId + ", source=" + source.length() + " chars, timeout=" + timeout
                + ", env=" + env.keySet() + ", workdir=" + workdir + ", captureCharts=" + captureCharts
                + ", artifactLimit=" + artifactLimit + "]";
    }

    static PythonRequest of(ExecutePythonSpec spec) {
        if (spec.getSandboxId().isEmpty()) {
            throw ComputeException.invalid("sandbox_id is empty: name the sandbox to run the snippet in");
        }
        if (spec.getSource().indexOf('\0') >= 0) {
            throw ComputeException.invalid("source contains a NUL character, which Python source cannot hold");
        }
        for (Map.Entry<String, String> e : spec.getEnvMap().entrySet()) {
            if (e.getKey().isEmpty()
                    || e.getKey().indexOf('=') >= 0
                    || e.getKey().indexOf('\0') >= 0) {
                throw ComputeException.invalid("env name \"" + e.getKey() + "\" is not a variable name");
            }
            if (e.getValue().indexOf('\0') >= 0) {
                throw ComputeException.invalid("env " + e.getKey() + " contains a NUL character");
            }
        }
        Optional<String> workdir = Optional.empty();
        if (spec.hasWorkdir()) {
            if (!spec.getWorkdir().startsWith("/") || spec.getWorkdir().indexOf('\0') >= 0) {
                throw ComputeException.invalid(
                        "workdir \"" + spec.getWorkdir() + "\" must be an absolute path inside the sandbox");
            }
            workdir = Optional.of(spec.getWorkdir());
        }
        if (spec.hasMaxArtifactBytes() && spec.getMaxArtifactBytes() < 0) {
            throw ComputeException.invalid("max_artifact_bytes must not be negative; 0 sends no artifacts");
        }
        Optional<Duration> timeout = ProcessRequests.timeout(
                spec.hasTimeoutSecs(),
                Duration.ofSeconds(Math.min(spec.getTimeoutSecs(), Long.MAX_VALUE / 1000 / 1000)));
        long limit = spec.hasMaxArtifactBytes() ? spec.getMaxArtifactBytes() : DriverFrames.MAX_ARTIFACT_BYTES;
        return new PythonRequest(
                spec.getSandboxId(),
                spec.getSource(),
                timeout,
                spec.getEnvMap(),
                workdir,
                spec.getCaptureCharts(),
                limit);
    }
}
