package ai.chalk.compute.autoconfigure.auth;

import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.auth.CredentialSource;
import ai.chalk.compute.auth.TokenSource;
import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.ChalkComputeProperties;
import ai.chalk.compute.autoconfigure.ConditionalOnRemoteTarget;
import ai.chalk.compute.autoconfigure.SdkEnvironment;
import ai.chalk.compute.connection.ConnectionSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Authenticates calls to a remote {@code chalk.compute.target}. Credentials are resolved with the
 * SDK's precedence: {@code chalk.compute.client-id}, {@code client-secret}, {@code identity-token-file},
 * {@code api-server} and {@code environment} first, then {@code CHALK_CLIENT_ID},
 * {@code CHALK_CLIENT_SECRET}, {@code CHALK_WEB_IDENTITY_TOKEN_FILE}, {@code CHALK_API_SERVER} and
 * {@code CHALK_ENVIRONMENT}, then {@code ~/.chalk.yml}. With none found, calls go without a token. A
 * {@code chalk login} ({@code ~/.chalk.yml}) is for the API server it names: its token goes only to a target on that
 * host and port, and its client secret to no other server, as the SDK's {@code SandboxClient.fromEnv} does.
 * The embedded server needs no token, so nothing here runs without a target.
 *
 * <p>Define a {@link ChalkCredentials} bean to choose credentials in code, or a {@link TokenSource}
 * bean to supply tokens from elsewhere.
 */
@AutoConfiguration(before = ChalkComputeAutoConfiguration.class)
@ConditionalOnRemoteTarget
@EnableConfigurationProperties(ChalkComputeProperties.class)
public final class ChalkComputeAuthAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(ChalkComputeAuthAutoConfiguration.class);

    @Bean
    @ConditionalOnMissingBean
    ChalkCredentials chalkComputeCredentials(ChalkComputeProperties properties, Environment environment) {
        SdkEnvironment sdk = SdkEnvironment.from(environment);
        ChalkCredentials credentials = ChalkCredentials.builder()
                .clientId(properties.getClientId())
                .clientSecret(properties.getClientSecret())
                .tokenFile(properties.getIdentityTokenFile())
                .apiServer(properties.getApiServer())
                .environment(properties.getEnvironment())
                .environmentVariables(sdk.variables())
                .homeDirectory(sdk.homeDirectory())
                .workingDirectory(sdk.workingDirectory())
                .resolve();
        // client credentials for a server of the user's own (a target, no API server named) are that server's:
        // it exchanges them itself, as Chalk Compute's standalone server does
        String target = properties.getTarget();
        boolean clientCredentials =
                credentials.clientId().isPresent() && credentials.clientSecret().isPresent();
        if (clientCredentials
                && credentials.apiServer().isEmpty()
                && credentials.source() != CredentialSource.CHALK_YML
                && target != null
                && !target.isBlank()) {
            return credentials.withApiServer(target.strip());
        }
        return credentials;
    }

    @Bean
    @ConditionalOnMissingBean
    ChalkComputeAuthInterceptor chalkComputeAuthInterceptor(
            ChalkCredentials credentials, ChalkComputeProperties properties, ObjectProvider<TokenSource> tokenSources) {
        TokenSource supplied = tokenSources.getIfUnique();
        if (supplied != null) {
            return new ChalkComputeAuthInterceptor(supplied, false);
        }
        if (!credentials.hasIdentity()
                && credentials.clientId().isEmpty()
                && credentials.clientSecret().isEmpty()) {
            log.debug("No Chalk credentials configured; calls to chalk.compute.target go without a token");
            return null;
        }
        if (credentials.source() == CredentialSource.CHALK_YML && !loginIsFor(credentials, properties.getTarget())) {
            // whoever runs the target (or reads a plaintext one on the way) would get the developer's Chalk identity
            log.info(
                    "Not sending the chalk login of ~/.chalk.yml (for {}) to chalk.compute.target {}; set"
                            + " chalk.compute.client-id and client-secret (or CHALK_CLIENT_ID and CHALK_CLIENT_SECRET)"
                            + " for that server",
                    credentials.apiServer().orElse("Chalk's API server"),
                    properties.getTarget());
            return null;
        }
        log.debug("Chalk Compute calls authenticate with {}", credentials);
        return new ChalkComputeAuthInterceptor(TokenSource.from(credentials), true);
    }

    /** Whether {@code target} is the API server the login names (the same host and port). */
    private static boolean loginIsFor(ChalkCredentials login, String target) {
        if (login.apiServer().isEmpty() || target == null || target.isBlank()) {
            return false;
        }
        try {
            return ConnectionSettings.forTarget(login.apiServer().get())
                    .target()
                    .equalsIgnoreCase(
                            ConnectionSettings.forTarget(target.strip()).target());
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
