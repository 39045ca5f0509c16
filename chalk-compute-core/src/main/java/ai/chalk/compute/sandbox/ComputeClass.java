package ai.chalk.compute.sandbox;

/**
 * Where a sandbox runs, as Chalk's platform places it. A server that cannot place sandboxes this way (a standalone
 * server runs every sandbox on its own host) refuses the sandbox with a {@code FailedPreconditionException} saying
 * so, rather than ignore the request.
 */
public enum ComputeClass {
    /** As a pod of the platform's Kubernetes cluster. */
    K8S,
    /** Directly on a host of the platform, for workloads that need the host's devices or kernel features. */
    HOST;

    ai.chalk.compute.proto.container.v1.ComputeClass toProto() {
        return switch (this) {
            case K8S -> ai.chalk.compute.proto.container.v1.ComputeClass.COMPUTE_CLASS_K8S;
            case HOST -> ai.chalk.compute.proto.container.v1.ComputeClass.COMPUTE_CLASS_HOST;
        };
    }
}
