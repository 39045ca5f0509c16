package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.server.egress.EgressPolicy;
import ai.chalk.compute.server.runtime.SandboxSpec;

/**
 * The network a workload gets from its {@code network_policy}: none (no policy, or one that allows nothing), the
 * whole network ({@code allowed_routes ["0.0.0.0/0"]} and nothing else, as before policies were enforced), or what a
 * policy allows, through the server's egress proxy (its secrets resolved).
 */
public sealed interface NetworkGrant permits NetworkGrant.None, NetworkGrant.Whole, NetworkGrant.Proxied {

    /** {@code spec} with this network. */
    SandboxSpec applyTo(SandboxSpec spec);

    /** Loopback only. */
    record None() implements NetworkGrant {
        @Override
        public SandboxSpec applyTo(SandboxSpec spec) {
            return spec;
        }
    }

    /** The whole network, the server's host and cloud metadata excepted. */
    record Whole() implements NetworkGrant {
        @Override
        public SandboxSpec applyTo(SandboxSpec spec) {
            return new SandboxSpec(
                    spec.id(),
                    spec.image(),
                    spec.env(),
                    spec.workdir(),
                    spec.limits(),
                    true,
                    spec.entrypoint(),
                    spec.volumes(),
                    spec.initialFilesystem());
        }
    }

    /**
     * What {@code policy} allows, through the egress proxy.
     *
     * @param policy the policy, its secrets resolved
     */
    record Proxied(EgressPolicy policy) implements NetworkGrant {
        @Override
        public SandboxSpec applyTo(SandboxSpec spec) {
            return spec.withEgress(policy);
        }
    }
}
