package ai.chalk.compute.server;

import ai.chalk.compute.server.runtime.local.LocalIsolation;
import ai.chalk.compute.server.runtime.local.LocalRuntime;
import ai.chalk.compute.server.runtime.local.SandboxDefaults;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * Settings of the local runtime: sandboxes in namespaces on this machine, no daemon.
 *
 * @param isolation    how sandboxes are isolated: auto (the default), required, none
 * @param defaults     what a sandbox gets unless it asks for less (memory, layer size, processes, open files) and
 *                     how many run at once
 * @param ociImportDir where {@code oci:NAME[:TAG]} image layouts and {@code oci-archive:NAME[:TAG]} tars are found;
 *                     empty for {@code <data-dir>/runtime/local/oci}. Names never reach outside it.
 * @param dockerHost   the Docker engine that {@code docker:} images are exported from ({@code unix:///path} or
 *                     {@code tcp://host:port}); empty for {@code DOCKER_HOST}, else the local socket
 * @param poolSize     sandboxes kept started ahead of time for each recently created spec, so that a create is a
 *                     hand-over; 0 for none
 */
public record LocalRuntimeOptions(
        LocalIsolation isolation,
        SandboxDefaults defaults,
        Optional<Path> ociImportDir,
        Optional<String> dockerHost,
        int poolSize)
        implements RuntimeOptions {

    /** Sandboxes kept ready per recently created spec unless set otherwise. */
    public static final int DEFAULT_POOL_SIZE = 2;

    /**
     * Isolation auto, {@link SandboxDefaults#STANDARD}, the default import directory and engine, {@value
     * #DEFAULT_POOL_SIZE} sandboxes ready per recently created spec.
     */
    public static final LocalRuntimeOptions DEFAULTS = builder().build();

    public LocalRuntimeOptions {
        Objects.requireNonNull(isolation, "isolation");
        Objects.requireNonNull(defaults, "defaults");
        Objects.requireNonNull(ociImportDir, "ociImportDir");
        dockerHost = Objects.requireNonNull(dockerHost, "dockerHost").filter(h -> !h.isBlank());
        if (poolSize < 0 || poolSize > LocalRuntime.MAX_POOL_SIZE) {
            throw new IllegalArgumentException(
                    "the sandbox pool size must be between 0 and " + LocalRuntime.MAX_POOL_SIZE + ", not " + poolSize);
        }
    }

    @Override
    public RuntimeChoice choice() {
        return RuntimeChoice.LOCAL;
    }

    /** A builder starting from the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link LocalRuntimeOptions}. */
    public static final class Builder {
        private LocalIsolation isolation = LocalIsolation.AUTO;
        private SandboxDefaults defaults = SandboxDefaults.STANDARD;
        private Path ociImportDir;
        private String dockerHost;
        private int poolSize = DEFAULT_POOL_SIZE;

        private Builder() {}

        /** How sandboxes are isolated. Default {@link LocalIsolation#AUTO}. */
        public Builder isolation(LocalIsolation isolation) {
            this.isolation = Objects.requireNonNull(isolation, "isolation");
            return this;
        }

        /** What a sandbox gets unless it asks for less. Default {@link SandboxDefaults#STANDARD}. */
        public Builder defaults(SandboxDefaults defaults) {
            this.defaults = Objects.requireNonNull(defaults, "defaults");
            return this;
        }

        /** Where OCI layouts and archives are imported from; null for {@code <data-dir>/runtime/local/oci}. */
        public Builder ociImportDir(Path dir) {
            this.ociImportDir = dir;
            return this;
        }

        /** The engine {@code docker:} images are exported from; null or blank for the default. */
        public Builder dockerHost(String host) {
            this.dockerHost = host;
            return this;
        }

        /**
         * Sandboxes kept started ahead of time for each spec created in the last minutes (at most a few specs), so
         * that a create of the same spec is a hand-over rather than a start; 0 for none. Default {@value
         * #DEFAULT_POOL_SIZE}.
         */
        public Builder poolSize(int perSpec) {
            this.poolSize = perSpec;
            return this;
        }

        /** The options. */
        public LocalRuntimeOptions build() {
            return new LocalRuntimeOptions(
                    isolation, defaults, Optional.ofNullable(ociImportDir), Optional.ofNullable(dockerHost), poolSize);
        }
    }
}
