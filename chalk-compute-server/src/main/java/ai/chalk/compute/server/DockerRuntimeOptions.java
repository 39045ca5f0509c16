package ai.chalk.compute.server;

import java.util.Objects;
import java.util.Optional;

/**
 * Settings of the docker runtime: one container per sandbox on a Docker engine (Docker, Podman and Colima speak
 * its API). The server does not start when no engine answers.
 *
 * @param host         the engine ({@code unix:///path} or {@code tcp://host:port}); empty for the
 *                     {@code DOCKER_HOST} environment variable, else {@code unix:///var/run/docker.sock}
 * @param defaultImage the image of sandboxes created without one; empty for
 *                     {@value ai.chalk.compute.server.runtime.docker.DockerRuntime#DEFAULT_IMAGE} (pulled on first
 *                     use)
 * @param workerImage  the image function workers run in: a JRE of Java 17 or newer with {@code java} on its PATH
 *                     and {@code /bin/sh}; the code is bound read-only at {@code /chalk/code}. Empty for
 *                     {@code eclipse-temurin:<the server's Java feature release>-jre} (pulled on first use where a
 *                     registry is reachable); {@code ci/build-test-images.sh jre} builds
 *                     {@code chalk-compute-test/jre:17} from Debian's packages. Deployments are refused while the
 *                     image is missing or has no Java.
 * @param maxSandboxes how many sandboxes (function replicas included) may run at once; more are refused
 * @param sandboxMemoryBytes the memory of a sandbox whose spec sets none (the container's whole use, its file system's
 *                     writes in the page cache included)
 */
public record DockerRuntimeOptions(
        Optional<String> host,
        Optional<String> defaultImage,
        Optional<String> workerImage,
        int maxSandboxes,
        long sandboxMemoryBytes)
        implements RuntimeOptions {

    /** The default engine, sandbox image and worker image. */
    public static final DockerRuntimeOptions DEFAULTS = builder().build();

    public DockerRuntimeOptions {
        host = Objects.requireNonNull(host, "host").filter(h -> !h.isBlank());
        defaultImage = Objects.requireNonNull(defaultImage, "defaultImage")
                .map(String::strip)
                .filter(i -> !i.isEmpty());
        workerImage = Objects.requireNonNull(workerImage, "workerImage")
                .map(String::strip)
                .filter(i -> !i.isEmpty());
        if (maxSandboxes < 1) {
            throw new IllegalArgumentException("max sandboxes must be at least 1, not " + maxSandboxes);
        }
        if (sandboxMemoryBytes < (16L << 20)) {
            throw new IllegalArgumentException(
                    "a sandbox's default memory must be at least 16 MiB, not " + sandboxMemoryBytes + " B");
        }
    }

    @Override
    public RuntimeChoice choice() {
        return RuntimeChoice.DOCKER;
    }

    /** A builder starting from the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link DockerRuntimeOptions}. */
    public static final class Builder {
        private String host;
        private String defaultImage;
        private String workerImage;
        private int maxSandboxes = ai.chalk.compute.server.runtime.local.SandboxDefaults.STANDARD.maxSandboxes();
        private long sandboxMemoryBytes = ai.chalk.compute.server.runtime.local.SandboxDefaults.STANDARD.memoryBytes();

        private Builder() {}

        /** The engine; null or blank for the default. */
        public Builder host(String host) {
            this.host = host;
            return this;
        }

        /** The image of sandboxes created without one; null or blank for the default. */
        public Builder defaultImage(String image) {
            this.defaultImage = image;
            return this;
        }

        /** The image function workers run in; null or blank for the default. */
        public Builder workerImage(String image) {
            this.workerImage = image;
            return this;
        }

        /** How many sandboxes (function replicas included) may run at once; default 256. */
        public Builder maxSandboxes(int sandboxes) {
            this.maxSandboxes = sandboxes;
            return this;
        }

        /** The memory of a sandbox whose spec sets none; default 4 GiB, as on the local runtime. */
        public Builder sandboxMemory(long bytes) {
            this.sandboxMemoryBytes = bytes;
            return this;
        }

        /** The options. */
        public DockerRuntimeOptions build() {
            return new DockerRuntimeOptions(
                    Optional.ofNullable(host),
                    Optional.ofNullable(defaultImage),
                    Optional.ofNullable(workerImage),
                    maxSandboxes,
                    sandboxMemoryBytes);
        }
    }
}
