package ai.chalk.compute.auth;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.FailedPreconditionException;

/**
 * Supplies the current access token, fetching or refreshing it when needed. Implementations are
 * thread-safe and cache: calling {@link #token()} on every RPC is cheap.
 *
 * <p>Two kinds exist: {@link ClientCredentialsTokenSource} exchanges a client id and secret with Chalk's
 * {@code AuthService}; {@link TokenFileSource} reads a rotating workload-identity token file. Pick one from
 * resolved credentials with {@link #from(ChalkCredentials)}, and attach it to calls with a
 * {@link ChalkAuthInterceptor}.
 */
public interface TokenSource extends AutoCloseable {

    /**
     * The current token: the cached one while it is fresh, otherwise a newly fetched one.
     *
     * @return the token and its environment
     * @throws ai.chalk.compute.error.AuthenticationException when the credentials are rejected or unusable
     * @throws ChalkComputeException                          for any other failure (server unreachable, ...)
     */
    AccessToken token();

    /**
     * Tells the source that a server rejected a token it handed out, so the next {@link #token()} fetches
     * a new one. Does nothing if the source has already moved on to another token.
     *
     * @param rejected the token a server rejected
     */
    default void invalidate(AccessToken rejected) {}

    /** Releases what the source holds (for example a connection to the API server). Idempotent. */
    @Override
    default void close() {}

    /**
     * The token source for resolved credentials: client credentials when a client id and secret are present
     * (exchanged at {@link ChalkCredentials#apiServerOrDefault()} over a connection the source owns and
     * {@linkplain #close() closes}), otherwise the token file.
     *
     * @param credentials resolved credentials, for example from {@link ChalkCredentials#fromEnv()}
     * @return a new source; nothing is fetched until the first {@link #token()}
     * @throws FailedPreconditionException when the credentials hold no identity, or only half of a client id/secret
     */
    static TokenSource from(ChalkCredentials credentials) {
        if (credentials.hasClientCredentials()) {
            ClientCredentialsTokenSource.Builder builder = ClientCredentialsTokenSource.builder()
                    .clientId(credentials.clientId().orElseThrow())
                    .clientSecret(credentials.clientSecret().orElseThrow())
                    .apiServer(credentials.apiServerOrDefault());
            credentials.environment().ifPresent(builder::environment);
            return builder.build();
        }
        if (credentials.tokenFile().isPresent()) {
            TokenFileSource.Builder builder =
                    TokenFileSource.builder().path(credentials.tokenFile().get());
            credentials.environment().ifPresent(builder::environment);
            return builder.build();
        }
        if (credentials.clientId().isPresent()) {
            throw new FailedPreconditionException("a Chalk client id is configured (" + credentials.source()
                    + ") but no client secret: set " + ChalkCredentials.ENV_CLIENT_SECRET);
        }
        if (credentials.clientSecret().isPresent()) {
            throw new FailedPreconditionException("a Chalk client secret is configured (" + credentials.source()
                    + ") but no client id: set " + ChalkCredentials.ENV_CLIENT_ID);
        }
        throw new FailedPreconditionException("no Chalk credentials found: set " + ChalkCredentials.ENV_CLIENT_ID
                + " and " + ChalkCredentials.ENV_CLIENT_SECRET + ", or " + ChalkCredentials.ENV_TOKEN_FILE
                + ", or run 'chalk login' to write ~/.chalk.yml");
    }
}
