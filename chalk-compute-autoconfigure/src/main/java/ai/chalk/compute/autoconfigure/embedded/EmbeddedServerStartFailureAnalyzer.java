package ai.chalk.compute.autoconfigure.embedded;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Explains at startup why the embedded Chalk Compute server did not start, and what to change.
 */
class EmbeddedServerStartFailureAnalyzer extends AbstractFailureAnalyzer<EmbeddedServerStartException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, EmbeddedServerStartException cause) {
        String reason = cause.getCause() != null ? cause.getCause().getMessage() : cause.getMessage();
        return new FailureAnalysis(
                "The embedded Chalk Compute server did not start (" + cause.settings() + "):\n\n    " + reason,
                "Change chalk.compute.embedded.runtime (local runs sandboxes on this machine), "
                        + "chalk.compute.local.isolation, chalk.compute.embedded.port or chalk.compute.embedded.data-dir; "
                        + "or set chalk.compute.target to use a remote server, or chalk.compute.embedded.enabled=false.",
                cause);
    }
}
