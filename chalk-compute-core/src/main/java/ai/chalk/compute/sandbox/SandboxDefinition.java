package ai.chalk.compute.sandbox;

import ai.chalk.compute.image.Image;
import ai.chalk.compute.network.Credential;
import ai.chalk.compute.network.NetworkPolicy;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ResourceLimits;
import ai.chalk.compute.proto.sandbox.v1.VolumeMount;
import ai.chalk.compute.secret.Secret;
import ai.chalk.compute.secret.SecretBindings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a sandbox is to be: image, resources, environment, secrets, volumes, network, lifetime, tags. Immutable and
 * reusable: one definition can start many sandboxes. Build it with {@link Sandbox#builder()} and start it with
 * {@link SandboxClient#create(SandboxDefinition)}, which returns the running {@link Sandbox}.
 * <pre>{@code
 * SandboxDefinition worker = Sandbox.builder().image(Image.debianSlim()).cpu("2").memory("4Gi").build();
 * try (Sandbox sandbox = client.create(worker)) {
 *     sandbox.exec("echo", "hello world");
 * }
 * }</pre>
 * The definition is the model of Testcontainers' {@code ContainerDef}; the handle, of its {@code ContainerState}.
 */
public final class SandboxDefinition {

    private final Definition settings;

    private SandboxDefinition(Definition settings) {
        this.settings = settings;
    }

    /**
     * Starts a definition; the same as {@link Sandbox#builder()}.
     *
     * @return a builder with nothing set: the server's default image and limits
     */
    public static Builder builder() {
        return new Builder();
    }

    /** The image reference, when the definition names one rather than a declarative image. */
    public Optional<String> image() {
        return Optional.ofNullable(settings.image);
    }

    /** The declarative image, built before the sandbox starts, when the definition has one. */
    public Optional<Image> declaredImage() {
        return Optional.ofNullable(settings.imageSpec);
    }

    /** The sandbox's name, when set. */
    public Optional<String> name() {
        return Optional.ofNullable(settings.name);
    }

    /** How long the sandbox may run, when set. */
    public Optional<Duration> lifetime() {
        return Optional.ofNullable(settings.placement.lifetime());
    }

    /** The sandbox's tags. */
    public Map<String, String> tags() {
        return settings.placement.tags();
    }

    /** The directory commands run in unless they set their own, when set. */
    public Optional<String> workdir() {
        return Optional.ofNullable(settings.placement.workdir());
    }

    /** The snapshot the sandbox starts from, when set. */
    public Optional<String> snapshot() {
        return Optional.ofNullable(settings.placement.snapshotId());
    }

    // ---- what the client sends ----

    /** The v1 creation request (image reference or spec, resources, env, entrypoint, volumes, name). */
    CreateSandboxRequest toCreateRequest() {
        return settings.toRequest();
    }

    /** The secrets the sandbox receives. */
    SecretBindings secretBindings() {
        return settings.secrets;
    }

    /** The network policy, or null when it sets none. */
    NetworkPolicy networkPolicy() {
        return settings.network;
    }

    /** The credentials the egress proxy adds for it. */
    List<Credential> credentials() {
        return settings.credentials;
    }

    /** Whether the sandbox gets a workload identity. */
    boolean chalkIdentity() {
        return settings.chalkIdentity;
    }

    /** Whether, with a client's defaults, it has options only {@code chalk.sandbox.v2} carries. */
    boolean needsV2(SandboxDefaults defaults) {
        return settings.placement.withDefaults(defaults).needsV2();
    }

    /** The v2 spec with this definition's lifetime, tags, gpu and compute class added, defaults filling gaps. */
    ChalkContainerSpec withV2Options(ChalkContainerSpec spec, SandboxDefaults defaults) {
        return settings.placement.withDefaults(defaults).applyTo(spec);
    }

    @Override
    public String toString() {
        return "SandboxDefinition[" + (settings.image != null ? "image=" + settings.image : "")
                + (settings.imageSpec != null ? "image=" + settings.imageSpec : "")
                + (settings.name != null ? ", name=" + settings.name : "")
                + (settings.placement.snapshotId() != null ? ", snapshot=" + settings.placement.snapshotId() : "")
                + "]";
    }

    /** The settings, as the v1 request carries them, and the v2-only ones in {@link Placement}. */
    private record Definition(
            String image,
            Image imageSpec,
            String cpu,
            String memory,
            Map<String, String> env,
            SecretBindings secrets,
            String name,
            List<String> entrypoint,
            List<VolumeMount> volumes,
            boolean chalkIdentity,
            Placement placement,
            NetworkPolicy network,
            List<Credential> credentials) {

        CreateSandboxRequest toRequest() {
            CreateSandboxRequest.Builder request = CreateSandboxRequest.newBuilder()
                    .putAllEnv(env)
                    .addAllEntrypoint(entrypoint)
                    .addAllVolumes(volumes);
            if (image != null) {
                request.setImage(image);
            } else if (imageSpec != null) {
                request.setImageSpec(imageSpec.toSpec());
            }
            if (cpu != null || memory != null) {
                ResourceLimits.Builder limits = ResourceLimits.newBuilder();
                if (cpu != null) {
                    limits.setCpu(cpu);
                }
                if (memory != null) {
                    limits.setMemory(memory);
                }
                request.setResourceLimits(limits);
            }
            if (name != null) {
                request.setName(name);
            }
            return request.build();
        }
    }

    /**
     * The options of a definition that only {@code chalk.sandbox.v2} carries (lifetime, tags, gpu, compute class),
     * the snapshot it starts from, and the default directory of its commands (kept by the handle).
     */
    private record Placement(
            Duration lifetime,
            Map<String, String> tags,
            String workdir,
            String snapshotId,
            String gpu,
            ComputeClass computeClass) {

        boolean needsV2() {
            return lifetime != null || !tags.isEmpty() || gpu != null || computeClass != null;
        }

        /** This placement with a client's defaults filled in where it sets nothing; its own tags win. */
        Placement withDefaults(SandboxDefaults defaults) {
            if (defaults.isEmpty() || snapshotId != null) {
                return this; // a sandbox from a snapshot keeps the snapshot's settings
            }
            Map<String, String> merged = new LinkedHashMap<>(defaults.tags());
            merged.putAll(tags);
            return new Placement(
                    lifetime != null ? lifetime : defaults.lifetime().orElse(null),
                    Collections.unmodifiableMap(merged),
                    workdir,
                    snapshotId,
                    gpu,
                    computeClass);
        }

        ChalkContainerSpec applyTo(ChalkContainerSpec spec) {
            ChalkContainerSpec.Builder b = spec.toBuilder().putAllTags(tags);
            if (lifetime != null) {
                b.setLifetime(com.google.protobuf.Duration.newBuilder()
                        .setSeconds(lifetime.getSeconds())
                        .setNanos(lifetime.getNano()));
            }
            if (gpu != null) {
                b.setResources(b.getResources().toBuilder().setGpu(gpu));
            }
            if (computeClass != null) {
                b.setComputeClass(computeClass.toProto());
            }
            return b.build();
        }
    }

    /**
     * Builds a {@link SandboxDefinition}: image, resources, environment, network, lifetime. Each call sets one option
     * and returns this builder; {@link #build()} makes the immutable definition, which
     * {@link SandboxClient#create(SandboxDefinition)} starts.
     */
    public static final class Builder {
        private String image;
        private Image imageSpec;
        private String cpu;
        private String memory;
        private final Map<String, String> env = new LinkedHashMap<>();
        private final Map<String, Secret> secretEnv = new LinkedHashMap<>();
        private final List<Secret> bulkSecrets = new ArrayList<>();
        private String name;
        private List<String> entrypoint = List.of();
        private final List<VolumeMount> volumes = new ArrayList<>();
        private boolean chalkIdentity;
        // lifetime, tags, workdir, snapshot, gpu, compute class: see the "placement and lifecycle" group below
        private Duration lifetime;
        private final Map<String, String> tags = new LinkedHashMap<>();
        private String workdir;
        private String snapshotId;
        private String gpu;
        private ComputeClass computeClass;
        private NetworkPolicy network;
        private final List<Credential> credentials = new ArrayList<>();

        private Builder() {}

        /**
         * Mounts a volume into the sandbox; its files persist after the sandbox ends.
         *
         * @param volume the volume's name (create it with {@code client.volumes().create(name)})
         * @param path   where it appears inside the sandbox, an absolute path such as {@code /data}
         * @return this builder
         */
        public Builder mountVolume(String volume, String path) {
            volumes.add(VolumeMount.newBuilder()
                    .setName(Objects.requireNonNull(volume, "volume"))
                    .setMountPath(Objects.requireNonNull(path, "path"))
                    .build());
            return this;
        }

        /**
         * Runs the sandbox from an existing image, for example {@code "ubuntu:latest"}. Without an
         * image the server uses its default.
         *
         * @param image an image reference
         * @return this builder
         */
        public Builder image(String image) {
            this.image = Objects.requireNonNull(image, "image");
            this.imageSpec = null;
            return this;
        }

        /**
         * Runs the sandbox from a declarative image, which the server builds (and caches) first.
         *
         * @param image the image
         * @return this builder
         */
        public Builder image(Image image) {
            this.imageSpec = Objects.requireNonNull(image, "image");
            this.image = null;
            return this;
        }

        /**
         * Limits the sandbox's CPU, in Kubernetes notation: {@code "2"}, {@code "0.5"}, {@code "500m"}.
         *
         * @param cpu the CPU limit
         * @return this builder
         */
        public Builder cpu(String cpu) {
            this.cpu = Objects.requireNonNull(cpu, "cpu");
            return this;
        }

        /**
         * Limits the sandbox's memory, in Kubernetes notation: {@code "4Gi"}, {@code "512Mi"}.
         *
         * @param memory the memory limit
         * @return this builder
         */
        public Builder memory(String memory) {
            this.memory = Objects.requireNonNull(memory, "memory");
            return this;
        }

        /**
         * Adds environment variables that every process in the sandbox sees.
         *
         * @param variables names and values
         * @return this builder
         */
        public Builder env(Map<String, String> variables) {
            variables.forEach(this::env);
            return this;
        }

        /**
         * Adds an environment variable that every process in the sandbox sees.
         *
         * @param name  the variable's name
         * @param value its value
         * @return this builder
         */
        public Builder env(String name, String value) {
            env.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, () -> "value of " + name));
            secretEnv.remove(name);
            return this;
        }

        /**
         * Adds an environment variable whose value is a secret, read where the secret lives when the sandbox starts
         * (or, for a local secret, read here when it is created); see {@link Secret}.
         * <pre>{@code
         * Sandbox.builder().env("API_KEY", Secret.fromChalkEnv("MY_SECRET"))
         * }</pre>
         *
         * @param name   the variable's name
         * @param secret the secret giving its value: a Chalk secret, a local variable or one key of an integration
         * @return this builder
         * @throws IllegalArgumentException when the secret gives more than one value (use {@link #secrets})
         */
        public Builder env(String name, Secret secret) {
            new SecretBindings(
                    Map.of(
                            Objects.requireNonNull(name, "name"),
                            Objects.requireNonNull(secret, () -> "secret of " + name)),
                    List.of()); // checks the binding
            secretEnv.put(name, secret);
            env.remove(name);
            return this;
        }

        /**
         * Adds secrets that give each of their values under its own name: a Chalk secret or local variable under its
         * name, an integration under each selected key, a dotenv file under each of its keys. Usable together with
         * {@link #env(String, Secret)}.
         *
         * @param secrets the secrets
         * @return this builder
         */
        public Builder secrets(Secret... secrets) {
            return secrets(List.of(secrets));
        }

        /**
         * Adds secrets in bulk; see {@link #secrets(Secret...)}.
         *
         * @param secrets the secrets
         * @return this builder
         */
        public Builder secrets(List<Secret> secrets) {
            secrets.forEach(s -> bulkSecrets.add(Objects.requireNonNull(s, "secret")));
            return this;
        }

        /**
         * Names the sandbox, to find it in listings.
         *
         * @param name the name
         * @return this builder
         */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /**
         * Sets the sandbox's main process, replacing the image's entrypoint.
         *
         * @param entrypoint the program and its arguments
         * @return this builder
         */
        public Builder entrypoint(List<String> entrypoint) {
            entrypoint.forEach(e -> Objects.requireNonNull(e, "entrypoint must not contain null"));
            this.entrypoint = List.copyOf(entrypoint);
            return this;
        }

        /**
         * Gives the sandbox a workload identity of its environment: a token file the server rotates, named by
         * {@code CHALK_WEB_IDENTITY_TOKEN_FILE}, and the server's address in {@code CHALK_COMPUTE_TARGET}, so that
         * this SDK (or Chalk's Python SDK) running inside works with no configuration. The token acts in the
         * sandbox's environment only and is no longer accepted once the sandbox ends.
         *
         * @param chalkIdentity whether the sandbox gets an identity (default {@code false})
         * @return this builder
         */
        public Builder chalkIdentity(boolean chalkIdentity) {
            this.chalkIdentity = chalkIdentity;
            return this;
        }

        // ---- placement and lifecycle: lifetime, tags, workdir, snapshot, gpu, compute class ----

        /**
         * How long the sandbox may run: the server terminates it when this much time has passed since it was created,
         * whatever runs in it. Without it the server's maximum applies (a standalone server's
         * {@code --sandbox-lifetime}); a longer lifetime than the server allows is refused with an
         * {@code InvalidRequestException} naming the maximum.
         *
         * @param lifetime a positive duration, such as {@code Duration.ofHours(1)}
         * @return this builder
         */
        public Builder lifetime(Duration lifetime) {
            Objects.requireNonNull(lifetime, "lifetime");
            if (lifetime.isNegative() || lifetime.isZero()) {
                throw new IllegalArgumentException("lifetime must be positive, got " + lifetime);
            }
            this.lifetime = lifetime;
            return this;
        }

        /**
         * Labels the sandbox, to find it with {@link ListOptions#tag(String, String)}. Tags are kept with the
         * sandbox and shown in {@link SandboxInfo#tags()}.
         *
         * @param tags keys and values
         * @return this builder
         */
        public Builder tags(Map<String, String> tags) {
            tags.forEach(this::tag);
            return this;
        }

        /**
         * Labels the sandbox with key-value pairs given in turn: {@code tags("team", "search", "stage", "dev")}.
         *
         * @param keysAndValues an even number of strings: a key, its value, the next key, ...
         * @return this builder
         * @throws IllegalArgumentException when a key has no value
         */
        public Builder tags(String... keysAndValues) {
            if (keysAndValues.length % 2 != 0) {
                throw new IllegalArgumentException("tags takes keys and values in pairs; the key \""
                        + keysAndValues[keysAndValues.length - 1] + "\" has no value");
            }
            for (int i = 0; i < keysAndValues.length; i += 2) {
                tag(keysAndValues[i], keysAndValues[i + 1]);
            }
            return this;
        }

        /**
         * Labels the sandbox with one tag; see {@link #tags(Map)}.
         *
         * @param key   the tag's key, not blank
         * @param value its value
         * @return this builder
         */
        public Builder tag(String key, String value) {
            Objects.requireNonNull(key, "tag key");
            if (key.isBlank()) {
                throw new IllegalArgumentException("a tag key must not be blank");
            }
            tags.put(key, Objects.requireNonNull(value, () -> "value of tag " + key));
            return this;
        }

        /**
         * The directory commands run in when they do not set their own with {@link Command#workdir(String)}.
         * It applies to the commands run through the handle this definition becomes; a handle from
         * {@link SandboxClient#get(String)} or {@link SandboxClient#attach(String)} uses the image's directory.
         * The directory must exist (the default image's {@code /workspace} does; {@code /tmp} does everywhere).
         *
         * @param workdir an absolute path inside the sandbox
         * @return this builder
         */
        public Builder workdir(String workdir) {
            Objects.requireNonNull(workdir, "workdir");
            if (!workdir.startsWith("/")) {
                throw new IllegalArgumentException("workdir must be an absolute path, got \"" + workdir + "\"");
            }
            this.workdir = workdir;
            return this;
        }

        /**
         * Starts the sandbox from a snapshot ({@link Sandbox#snapshot()}): its files as they were, with the
         * settings of the sandbox the snapshot was taken of. Those settings cannot be changed, so a definition
         * with a snapshot sets nothing else but {@link #workdir(String)}.
         *
         * @param snapshotId a completed snapshot's id
         * @return this builder
         */
        public Builder snapshot(String snapshotId) {
            Objects.requireNonNull(snapshotId, "snapshotId");
            if (snapshotId.isBlank()) {
                throw new IllegalArgumentException("a snapshot id must not be blank");
            }
            this.snapshotId = snapshotId;
            return this;
        }

        /**
         * Asks for GPUs, in Kubernetes notation ({@code "1"}, {@code "nvidia-tesla-t4:1"}). A server without GPUs
         * for sandboxes (a standalone server) refuses the sandbox with a {@code FailedPreconditionException}
         * saying so, rather than start it without.
         *
         * @param gpu the GPU request
         * @return this builder
         */
        public Builder gpu(String gpu) {
            Objects.requireNonNull(gpu, "gpu");
            if (gpu.isBlank()) {
                throw new IllegalArgumentException("gpu must not be blank");
            }
            this.gpu = gpu;
            return this;
        }

        /**
         * Where the platform places the sandbox. A server that cannot place it so (a standalone server runs every
         * sandbox on its own host) refuses it with a {@code FailedPreconditionException} saying so.
         *
         * @param computeClass the compute class
         * @return this builder
         */
        public Builder computeClass(ComputeClass computeClass) {
            this.computeClass = Objects.requireNonNull(computeClass, "computeClass");
            return this;
        }

        private Placement placement() {
            if (snapshotId != null) {
                List<String> set = new ArrayList<>();
                if (image != null || imageSpec != null) {
                    set.add("image");
                }
                if (cpu != null) {
                    set.add("cpu");
                }
                if (memory != null) {
                    set.add("memory");
                }
                if (!env.isEmpty() || !secretEnv.isEmpty() || !bulkSecrets.isEmpty()) {
                    set.add("env/secrets");
                }
                if (name != null) {
                    set.add("name");
                }
                if (!entrypoint.isEmpty()) {
                    set.add("entrypoint");
                }
                if (!volumes.isEmpty()) {
                    set.add("mountVolume");
                }
                if (chalkIdentity) {
                    set.add("chalkIdentity");
                }
                if (lifetime != null) {
                    set.add("lifetime");
                }
                if (!tags.isEmpty()) {
                    set.add("tags");
                }
                if (gpu != null) {
                    set.add("gpu");
                }
                if (computeClass != null) {
                    set.add("computeClass");
                }
                if (!set.isEmpty()) {
                    throw new IllegalStateException("a sandbox started from snapshot " + snapshotId
                            + " runs with the settings of the sandbox the snapshot was taken of; remove "
                            + String.join(", ", set) + " from the definition");
                }
            }
            return new Placement(
                    lifetime,
                    Collections.unmodifiableMap(new LinkedHashMap<>(tags)),
                    workdir,
                    snapshotId,
                    gpu,
                    computeClass);
        }

        /**
         * What the sandbox may reach on the network; without a policy it has none (its own loopback only). See
         * {@link NetworkPolicy}.
         * <pre>{@code
         * Sandbox.builder().network(NetworkPolicy.allowlist("pypi.org", "*.pythonhosted.org"))
         * }</pre>
         *
         * @param policy the policy
         * @return this builder
         */
        public Builder network(NetworkPolicy policy) {
            this.network = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * Gives requests to {@code host} a credential the sandbox never holds: the variable named after the secret
         * holds a placeholder, which the egress proxy replaces by the secret's value in request headers to the host
         * only (see {@link Credential}). The host is allowed as well.
         * <pre>{@code
         * Sandbox.builder().addCredentials("api.openai.com", "OPENAI_API_KEY")
         * // in the sandbox: curl -H "Authorization: Bearer $OPENAI_API_KEY" https://api.openai.com/v1/models
         * }</pre>
         *
         * @param host       an exact name or a {@code *.} wildcard
         * @param secretName a Chalk secret of the environment; the variable of its name holds the placeholder
         * @return this builder
         */
        public Builder addCredentials(String host, String secretName) {
            return addCredentials(List.of(host), Secret.fromChalkEnv(secretName));
        }

        /**
         * As {@link #addCredentials(String, String)}, for a Chalk secret or a local variable.
         *
         * @param host   an exact name or a {@code *.} wildcard
         * @param secret {@link Secret#fromChalkEnv} or {@link Secret#fromLocalEnv}
         * @return this builder
         */
        public Builder addCredentials(String host, Secret secret) {
            return addCredentials(List.of(host), secret);
        }

        /**
         * As {@link #addCredentials(String, String)}, for several hosts.
         *
         * @param hosts      exact names or {@code *.} wildcards
         * @param secretName a Chalk secret of the environment
         * @return this builder
         */
        public Builder addCredentials(List<String> hosts, String secretName) {
            return addCredentials(hosts, Secret.fromChalkEnv(secretName));
        }

        /**
         * As {@link #addCredentials(String, String)}, for several hosts and a Chalk secret or a local variable.
         * <pre>{@code
         * .addCredentials(List.of("api.slack.com", "*.slack.com"), Secret.fromLocalEnv("SLACK_BOT_TOKEN"))
         * }</pre>
         *
         * @param hosts  exact names or {@code *.} wildcards
         * @param secret {@link Secret#fromChalkEnv} or {@link Secret#fromLocalEnv}
         * @return this builder
         */
        public Builder addCredentials(List<String> hosts, Secret secret) {
            credentials.add(new Credential(hosts, secret));
            return this;
        }

        /**
         * The definition, immutable: this builder can go on to make others. Start it with
         * {@link SandboxClient#create(SandboxDefinition)}.
         *
         * @return the definition
         * @throws IllegalArgumentException when a credential's variable is also set by {@code env(...)}
         * @throws IllegalStateException    when a definition from a snapshot sets what the snapshot fixes
         */
        public SandboxDefinition build() {
            for (Credential c : credentials) {
                if (env.containsKey(c.variable()) || secretEnv.containsKey(c.variable())) {
                    throw new IllegalArgumentException(c.variable() + " is set by env(...) and holds the placeholder of"
                            + " a credential; remove one of them");
                }
            }
            return new SandboxDefinition(new Definition(
                    image,
                    imageSpec,
                    cpu,
                    memory,
                    Collections.unmodifiableMap(new LinkedHashMap<>(env)),
                    new SecretBindings(secretEnv, bulkSecrets),
                    name,
                    entrypoint,
                    List.copyOf(volumes),
                    chalkIdentity,
                    placement(),
                    network,
                    List.copyOf(credentials)));
        }
    }
}
