package ai.chalk.compute.code;

import ai.chalk.compute.network.NetworkPolicy;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxDefinition;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * How a {@link CodeSandbox} is made, as code_sandboxes' {@code SandboxConfig}: the default execution timeout, the
 * environment (image), resources, working directory, environment variables, maximum lifetime, network policy and
 * tags, and the language its snippets are in. Immutable; build one with {@link #builder()}.
 *
 * <pre>{@code
 * SandboxConfig config = SandboxConfig.builder()
 *         .timeout(Duration.ofSeconds(30))
 *         .memoryLimit(4L << 30)
 *         .cpuLimit(2)
 *         .workingDir("/tmp")
 *         .env("DEBUG", "1")
 *         .maxLifetime(Duration.ofHours(1))
 *         .build();
 * }</pre>
 */
public final class SandboxConfig {

    private final Optional<Duration> timeout;
    private final Optional<String> environment;
    private final Optional<String> cpu;
    private final Optional<String> memory;
    private final Optional<String> gpu;
    private final Optional<String> workingDir;
    private final Map<String, String> env;
    private final Optional<Duration> maxLifetime;
    private final Optional<NetworkPolicy> network;
    private final Map<String, String> tags;
    private final Optional<String> snapshot;
    private final Optional<String> name;
    private final Language language;

    private SandboxConfig(Builder b) {
        this.timeout = Optional.ofNullable(b.timeout);
        this.environment = Optional.ofNullable(b.environment);
        this.cpu = Optional.ofNullable(b.cpu);
        this.memory = Optional.ofNullable(b.memory);
        this.gpu = Optional.ofNullable(b.gpu);
        this.workingDir = Optional.ofNullable(b.workingDir);
        this.env = Map.copyOf(b.env);
        this.maxLifetime = Optional.ofNullable(b.maxLifetime);
        this.network = Optional.ofNullable(b.network);
        this.tags = Map.copyOf(b.tags);
        this.snapshot = Optional.ofNullable(b.snapshot);
        this.name = Optional.ofNullable(b.name);
        this.language = b.language;
    }

    /** The defaults: Python, the server's default image and resources, no timeout, no network. */
    public static SandboxConfig defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The default timeout of each {@code runCode}. */
    public Optional<Duration> timeout() {
        return timeout;
    }

    /** The language of the snippets. */
    public Language language() {
        return language;
    }

    /** The environment (image). */
    public Optional<String> environment() {
        return environment;
    }

    /** The working directory of snippets and commands. */
    public Optional<String> workingDir() {
        return workingDir;
    }

    /** The CPU limit, as a quantity ({@code 500m}, {@code 2}). */
    public Optional<String> cpu() {
        return cpu;
    }

    /** The memory limit, as a quantity ({@code 512Mi}, {@code 2G}, or bytes). */
    public Optional<String> memory() {
        return memory;
    }

    /** The GPUs asked for. */
    public Optional<String> gpu() {
        return gpu;
    }

    /** The environment variables of snippets and commands. */
    public Map<String, String> env() {
        return env;
    }

    /** The tags (labels) of the sandbox. */
    public Map<String, String> tags() {
        return tags;
    }

    /** The snapshot the sandbox starts from ({@link CodeSnapshot#id()}). */
    public Optional<String> snapshot() {
        return snapshot;
    }

    /** The sandbox definition this configuration makes. */
    SandboxDefinition.Builder sandbox() {
        SandboxDefinition.Builder b = Sandbox.builder();
        if (snapshot.isPresent()) {
            b.snapshot(snapshot.get());
            workingDir.ifPresent(b::workdir);
            return b;
        }
        environment.ifPresent(b::image);
        cpu.ifPresent(b::cpu);
        memory.ifPresent(b::memory);
        gpu.ifPresent(b::gpu);
        workingDir.ifPresent(b::workdir);
        if (!env.isEmpty()) {
            b.env(env);
        }
        maxLifetime.ifPresent(b::lifetime);
        network.ifPresent(b::network);
        if (!tags.isEmpty()) {
            b.tags(tags);
        }
        name.ifPresent(b::name);
        return b;
    }

    /** Builds a {@link SandboxConfig}. */
    public static final class Builder {
        private Duration timeout;
        private String environment;
        private String cpu;
        private String memory;
        private String gpu;
        private String workingDir;
        private final Map<String, String> env = new LinkedHashMap<>();
        private Duration maxLifetime;
        private NetworkPolicy network;
        private final Map<String, String> tags = new LinkedHashMap<>();
        private String snapshot;
        private String name;
        private Language language = Language.PYTHON;

        private Builder() {}

        /** The default timeout of each {@code runCode} (a {@link RunOptions#timeout(Duration)} overrides it). */
        public Builder timeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("timeout must be positive, got " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /** The environment: an image reference the server can run ({@code python:3.12-slim}, a built image). */
        public Builder environment(String image) {
            this.environment = Objects.requireNonNull(image, "image");
            return this;
        }

        /** CPU in Kubernetes notation ({@code "2"}, {@code "500m"}). */
        public Builder cpu(String cpu) {
            this.cpu = Objects.requireNonNull(cpu, "cpu");
            return this;
        }

        /** CPU cores, as code_sandboxes' {@code cpu_limit}. */
        public Builder cpuLimit(double cores) {
            if (!(cores > 0)) {
                throw new IllegalArgumentException("cpuLimit must be positive, got " + cores);
            }
            this.cpu = Math.round(cores * 1000) + "m";
            return this;
        }

        /** Memory in Kubernetes notation ({@code "4Gi"}). */
        public Builder memory(String memory) {
            this.memory = Objects.requireNonNull(memory, "memory");
            return this;
        }

        /** Memory in bytes, as code_sandboxes' {@code memory_limit}. */
        public Builder memoryLimit(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("memoryLimit must be positive, got " + bytes);
            }
            this.memory = Long.toString(bytes);
            return this;
        }

        /**
         * GPUs ({@code "1"}, {@code "nvidia-tesla-t4:1"}); a server without GPUs refuses the sandbox with a
         * {@code FailedPreconditionException} saying so.
         */
        public Builder gpu(String gpu) {
            this.gpu = Objects.requireNonNull(gpu, "gpu");
            return this;
        }

        /** The directory snippets and commands start in. */
        public Builder workingDir(String dir) {
            this.workingDir = Objects.requireNonNull(dir, "dir");
            return this;
        }

        /** An environment variable of the sandbox. */
        public Builder env(String name, String value) {
            env.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** Environment variables of the sandbox. */
        public Builder env(Map<String, String> variables) {
            variables.forEach(this::env);
            return this;
        }

        /** How long the sandbox may live; the server terminates it then. */
        public Builder maxLifetime(Duration lifetime) {
            this.maxLifetime = Objects.requireNonNull(lifetime, "lifetime");
            return this;
        }

        /** What the sandbox may reach on the network (none by default). */
        public Builder networkPolicy(NetworkPolicy policy) {
            this.network = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** A tag kept with the sandbox, to find it with {@link CodeSandbox#list}. */
        public Builder tag(String key, String value) {
            tags.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** Tags kept with the sandbox. */
        public Builder tags(Map<String, String> tags) {
            tags.forEach(this::tag);
            return this;
        }

        /**
         * Starts from a snapshot ({@link CodeSandbox#createSnapshot(String)}, of the same variant): its files and
         * the interpreter's variables. A chalk sandbox takes the settings of the sandbox the snapshot was taken of
         * (only the working directory may be set besides); a docker sandbox runs the snapshot's image with this
         * configuration's limits, working directory and environment.
         */
        public Builder snapshot(String snapshotId) {
            this.snapshot = Objects.requireNonNull(snapshotId, "snapshotId");
            return this;
        }

        /** A name for the sandbox. */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /** The language of {@code runCode} (Python by default). */
        public Builder language(Language language) {
            this.language = Objects.requireNonNull(language, "language");
            return this;
        }

        public SandboxConfig build() {
            return new SandboxConfig(this);
        }
    }
}
