package ai.chalk.compute.server;

import ai.chalk.compute.server.egress.EgressOptions;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.docker.DockerRuntime;
import ai.chalk.compute.server.runtime.local.LocalRuntime;
import ai.chalk.compute.server.worker.WorkerJava;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Starts the runtime that {@link RuntimeOptions} choose, and picks the Java that function workers run on it. */
final class RuntimeStart {

    private static final Logger log = LoggerFactory.getLogger(RuntimeStart.class);
    /** How long the runtime {@code auto} waits for a Docker engine to answer before it picks local. */
    static final Duration AUTO_PROBE_TIMEOUT = Duration.ofSeconds(2);

    private RuntimeStart() {}

    /**
     * The runtime, its state under {@code <dataDir>/runtime/<name>}.
     *
     * @throws IllegalStateException when the runtime cannot run here (no engine answers, isolation required but
     *                               unavailable)
     */
    static SandboxRuntime start(RuntimeOptions options, EgressOptions egress, Path dataDir) {
        if (options instanceof LocalRuntimeOptions local) {
            return local(local, egress, dataDir);
        }
        if (options instanceof DockerRuntimeOptions docker) {
            return docker(docker, egress, dataDir);
        }
        RuntimeOptions.Auto auto = (RuntimeOptions.Auto) options;
        return DockerRuntime.engineAnswers(auto.docker().host().orElse(null), AUTO_PROBE_TIMEOUT)
                ? docker(auto.docker(), egress, dataDir)
                : local(auto.local(), egress, dataDir);
    }

    private static SandboxRuntime local(LocalRuntimeOptions options, EgressOptions egress, Path dataDir) {
        return LocalRuntime.builder(dataDir.resolve("runtime").resolve("local"))
                .egress(egress)
                .isolation(options.isolation())
                .defaults(options.defaults())
                .poolSize(options.poolSize())
                .dockerHost(options.dockerHost().orElse(null))
                .ociImportDir(options.ociImportDir().orElse(null))
                .build();
    }

    private static SandboxRuntime docker(DockerRuntimeOptions options, EgressOptions egress, Path dataDir) {
        DockerRuntime.Builder b = DockerRuntime.builder(
                        dataDir.resolve("runtime").resolve("docker"))
                .dockerHost(options.host().orElse(null))
                .egress(egress)
                .maxSandboxes(options.maxSandboxes())
                .sandboxMemory(options.sandboxMemoryBytes());
        options.defaultImage().ifPresent(b::defaultImage);
        return b.build();
    }

    /**
     * What function workers run on: the server's own Java on a runtime whose sandboxes see the host's system, a
     * JRE image elsewhere (a container has neither the host's JDK nor, bound in, its libraries).
     */
    static WorkerJava workerJava(SandboxRuntime runtime, RuntimeOptions options) {
        Optional<String> image = options instanceof DockerRuntimeOptions docker
                ? docker.workerImage()
                : options instanceof RuntimeOptions.Auto auto ? auto.docker().workerImage() : Optional.empty();
        if (runtime.sandboxesSeeHostSystem()) {
            image.ifPresent(i -> log.warn(
                    "Worker image {} is not used: function workers on the {} runtime run the" + " server's Java",
                    i,
                    runtime.name()));
            return WorkerJava.serverJava();
        }
        WorkerJava java = WorkerJava.image(image.orElseGet(WorkerJava::defaultImage));
        log.info("Function workers on the {} runtime run {}", runtime.name(), java.describe());
        return java;
    }
}
