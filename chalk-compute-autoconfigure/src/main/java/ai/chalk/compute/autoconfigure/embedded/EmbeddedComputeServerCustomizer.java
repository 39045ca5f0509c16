package ai.chalk.compute.autoconfigure.embedded;

import ai.chalk.compute.server.ComputeServer;

/**
 * Adjusts the embedded server's settings before it starts, for example to add server interceptors
 * or change the sandbox lifetime. Declare one as a bean:
 * <pre>{@code
 * @Bean
 * EmbeddedComputeServerCustomizer shortLivedSandboxes() {
 *     return server -> server.sandboxLifetime(Duration.ofMinutes(10));
 * }
 * }</pre>
 */
@FunctionalInterface
public interface EmbeddedComputeServerCustomizer {

    /**
     * @param server the settings of the server about to be created
     */
    void customize(ComputeServer.Builder server);
}
