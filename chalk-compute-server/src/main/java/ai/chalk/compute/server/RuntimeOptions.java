package ai.chalk.compute.server;

import java.util.Objects;

/**
 * Which runtime a server runs its sandboxes on, with that runtime's own settings: {@link LocalRuntimeOptions} (the
 * default), {@link DockerRuntimeOptions}, or {@link #auto} for docker when an engine answers and local otherwise.
 *
 * <pre>{@code
 * ComputeServer.builder().runtime(LocalRuntimeOptions.builder().isolation(LocalIsolation.REQUIRED).build());
 * ComputeServer.builder().runtime(DockerRuntimeOptions.builder().host("tcp://build-host:2375").build());
 * }</pre>
 */
public sealed interface RuntimeOptions permits LocalRuntimeOptions, DockerRuntimeOptions, RuntimeOptions.Auto {

    /** Which runtime these options choose. */
    RuntimeChoice choice();

    /** Docker (with {@code docker}'s settings) when an engine answers within two seconds, else local. */
    static RuntimeOptions auto(LocalRuntimeOptions local, DockerRuntimeOptions docker) {
        return new Auto(local, docker);
    }

    /**
     * The options of {@code choice} out of settings made for each runtime, as a command line or configuration
     * properties give them all at once.
     */
    static RuntimeOptions of(RuntimeChoice choice, LocalRuntimeOptions local, DockerRuntimeOptions docker) {
        return switch (choice) {
            case LOCAL -> local;
            case DOCKER -> docker;
            case AUTO -> auto(local, docker);
        };
    }

    /**
     * Docker when an engine answers, else local; each with its settings.
     *
     * @param local  the settings if local is chosen
     * @param docker the settings if docker is chosen; its host is the engine asked
     */
    record Auto(LocalRuntimeOptions local, DockerRuntimeOptions docker) implements RuntimeOptions {
        public Auto {
            Objects.requireNonNull(local, "local");
            Objects.requireNonNull(docker, "docker");
        }

        @Override
        public RuntimeChoice choice() {
            return RuntimeChoice.AUTO;
        }
    }
}
