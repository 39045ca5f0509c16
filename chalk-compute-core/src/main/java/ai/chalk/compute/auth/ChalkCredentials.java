package ai.chalk.compute.auth;

import ai.chalk.compute.error.FailedPreconditionException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who the client is to Chalk: client credentials (id and secret) or a rotating workload-identity token
 * file, plus the API server and environment to use.
 *
 * <p>Resolve them the way Chalk's SDKs do, with {@link #fromEnv()} or {@link #builder()}:
 * <pre>{@code
 * ChalkCredentials credentials = ChalkCredentials.builder()
 *         .clientId(properties.getClientId())         // null means "not set here"
 *         .clientSecret(properties.getClientSecret())
 *         .resolve();
 * try (TokenSource tokens = TokenSource.from(credentials)) {
 *     Channel authenticated = ClientInterceptors.intercept(channel, new ChalkAuthInterceptor(tokens));
 * }
 * }</pre>
 *
 * <p>Settings are looked up in this order, the first place that has one winning:
 * <ol>
 *   <li>values given explicitly ({@link Builder#clientId(String)} and friends, what a Spring
 *       {@code application.yml} passes);</li>
 *   <li>environment variables {@value #ENV_CLIENT_ID}, {@value #ENV_CLIENT_SECRET}, {@value #ENV_API_SERVER},
 *       {@value #ENV_ENVIRONMENT} (or {@value #ENV_ENVIRONMENT_ID}) and {@value #ENV_TOKEN_FILE};</li>
 *   <li>the Chalk CLI's {@code ~/.chalk.yml} written by {@code chalk login} ({@code $XDG_CONFIG_HOME/.chalk.yml}
 *       when that variable is set; {@code .chalk.yaml} is accepted too): the login listed under {@code tokens}
 *       for the working directory or its nearest parent, else the {@code default} one.</li>
 * </ol>
 * The API server and environment are resolved setting by setting. The identity is not mixed across places:
 * it comes from the first place that names a client id, a client secret or a token file (an explicit id or
 * secret may only be completed by the other half from the environment), and within one place a client id and
 * secret win over a token file. {@code ~/.chalk.yml} is read only when neither code nor the environment names
 * an identity; its API server and active environment then apply unless set explicitly or in the environment.
 *
 * <p>The client secret never appears in {@link #toString()}, logs or exception messages.
 *
 * @param clientId     the client id, if any
 * @param clientSecret the client secret, if any
 * @param tokenFile    a file holding a directly usable Chalk JWT, re-read as it rotates, if any
 * @param apiServer    the Chalk API server URL (where tokens are exchanged), if configured
 * @param environment  the environment id or name to act in, if chosen; otherwise the token decides
 * @param validUntil   when the client credentials stop being valid, if known (from {@code ~/.chalk.yml})
 * @param source       where the identity (client credentials or token file) came from
 */
public record ChalkCredentials(
        Optional<String> clientId,
        Optional<String> clientSecret,
        Optional<Path> tokenFile,
        Optional<String> apiServer,
        Optional<String> environment,
        Optional<Instant> validUntil,
        CredentialSource source) {

    /** The client id variable. */
    public static final String ENV_CLIENT_ID = "CHALK_CLIENT_ID";
    /** The client secret variable. */
    public static final String ENV_CLIENT_SECRET = "CHALK_CLIENT_SECRET";
    /** The API server variable, a URL such as {@code https://api.chalk.ai}. */
    public static final String ENV_API_SERVER = "CHALK_API_SERVER";
    /** The environment variable naming the Chalk environment to act in. */
    public static final String ENV_ENVIRONMENT = "CHALK_ENVIRONMENT";
    /** The environment id variable, used when {@value #ENV_ENVIRONMENT} is not set. */
    public static final String ENV_ENVIRONMENT_ID = "CHALK_ENVIRONMENT_ID";
    /** The variable naming a rotating workload-identity token file. */
    public static final String ENV_TOKEN_FILE = "CHALK_WEB_IDENTITY_TOKEN_FILE";
    /** The API server used when none is configured, as in Chalk's SDKs. */
    public static final String DEFAULT_API_SERVER = "https://api.chalk.ai";

    private static final Logger log = LoggerFactory.getLogger(ChalkCredentials.class);

    /**
     * Validates the components.
     *
     * @param clientId     the client id, if any
     * @param clientSecret the client secret, if any
     * @param tokenFile    a rotating token file, if any
     * @param apiServer    the API server URL, if configured
     * @param environment  the environment to act in, if chosen
     * @param validUntil   when the client credentials stop being valid, if known
     * @param source       where the identity came from
     */
    public ChalkCredentials {
        Objects.requireNonNull(clientId, "clientId");
        Objects.requireNonNull(clientSecret, "clientSecret");
        Objects.requireNonNull(tokenFile, "tokenFile");
        Objects.requireNonNull(apiServer, "apiServer");
        Objects.requireNonNull(environment, "environment");
        Objects.requireNonNull(validUntil, "validUntil");
        Objects.requireNonNull(source, "source");
    }

    /**
     * Credentials from this process's environment variables and {@code ~/.chalk.yml}, for the current
     * working directory.
     *
     * @return the resolved credentials; {@link #hasIdentity()} tells whether any were found
     * @throws FailedPreconditionException when {@code ~/.chalk.yml} exists but cannot be read or parsed
     */
    public static ChalkCredentials fromEnv() {
        return builder().resolve();
    }

    /**
     * Starts resolving credentials: set what is known explicitly, then {@link Builder#resolve()}.
     *
     * @return a builder reading {@link System#getenv()}, {@code user.home} and {@code user.dir} unless told otherwise
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Explicit client credentials, with no look-up anywhere else.
     *
     * @param clientId     the client id
     * @param clientSecret the client secret
     * @return credentials exchanged at {@link #DEFAULT_API_SERVER} unless {@link #withApiServer(String)} says otherwise
     */
    public static ChalkCredentials ofClientCredentials(String clientId, String clientSecret) {
        return new ChalkCredentials(
                Optional.of(nonBlank(clientId, "clientId")),
                Optional.of(nonBlank(clientSecret, "clientSecret")),
                Optional.empty(),
                Optional.empty(),
                Optional.empty(),
                Optional.empty(),
                CredentialSource.EXPLICIT);
    }

    /**
     * An explicit rotating token file, with no look-up anywhere else.
     *
     * @param tokenFile a file holding a Chalk JWT
     * @return credentials using that file
     */
    public static ChalkCredentials ofTokenFile(Path tokenFile) {
        Objects.requireNonNull(tokenFile, "tokenFile");
        return new ChalkCredentials(
                Optional.empty(),
                Optional.empty(),
                Optional.of(tokenFile),
                Optional.empty(),
                Optional.empty(),
                Optional.empty(),
                CredentialSource.EXPLICIT);
    }

    /**
     * These credentials with another API server.
     *
     * @param apiServer a URL such as {@code https://api.chalk.ai}
     * @return new credentials
     */
    public ChalkCredentials withApiServer(String apiServer) {
        return new ChalkCredentials(
                clientId,
                clientSecret,
                tokenFile,
                Optional.of(nonBlank(apiServer, "apiServer")),
                environment,
                validUntil,
                source);
    }

    /**
     * These credentials acting in another environment (overriding what the token would choose).
     *
     * @param environment an environment id or name
     * @return new credentials
     */
    public ChalkCredentials withEnvironment(String environment) {
        return new ChalkCredentials(
                clientId,
                clientSecret,
                tokenFile,
                apiServer,
                Optional.of(nonBlank(environment, "environment")),
                validUntil,
                source);
    }

    /**
     * Whether a client id and secret, or a token file, were found.
     *
     * @return {@code true} when {@link TokenSource#from(ChalkCredentials)} can build a source
     */
    public boolean hasIdentity() {
        return hasClientCredentials() || tokenFile.isPresent();
    }

    /**
     * Whether both a client id and a client secret are present.
     *
     * @return {@code true} when these credentials are exchanged as client credentials
     */
    public boolean hasClientCredentials() {
        return clientId.isPresent() && clientSecret.isPresent();
    }

    /**
     * The API server to exchange tokens at.
     *
     * @return the configured one, else {@value #DEFAULT_API_SERVER}
     */
    public String apiServerOrDefault() {
        return apiServer.orElse(DEFAULT_API_SERVER);
    }

    /** Shows the credentials with the secret masked. */
    @Override
    public String toString() {
        return "ChalkCredentials[source=" + source
                + clientId.map(id -> ", clientId=" + id).orElse("")
                + (clientSecret.isPresent() ? ", clientSecret=****" : "")
                + tokenFile.map(f -> ", tokenFile=" + f).orElse("")
                + apiServer.map(s -> ", apiServer=" + s).orElse("")
                + environment.map(e -> ", environment=" + e).orElse("")
                + validUntil.map(v -> ", validUntil=" + v).orElse("") + "]";
    }

    private static String nonBlank(String value, String name) {
        Objects.requireNonNull(value, name);
        if (value.isBlank()) {
            throw new IllegalArgumentException(name + " must not be blank");
        }
        return value.trim();
    }

    private static Optional<String> present(String value) {
        return value == null || value.isBlank() ? Optional.empty() : Optional.of(value.trim());
    }

    /**
     * Resolves credentials: explicit values first, then environment variables, then {@code ~/.chalk.yml}.
     * Explicit setters accept {@code null} (or blank) for "not set here", so unset configuration properties
     * can be passed straight through. Not thread-safe.
     */
    public static final class Builder {
        private String clientId;
        private String clientSecret;
        private Path tokenFile;
        private String apiServer;
        private String environment;
        private Map<String, String> env;
        private Path homeDirectory;
        private boolean homeDirectorySet;
        private Path workingDirectory;

        private Builder() {}

        /**
         * The client id, or {@code null} to look it up.
         *
         * @param clientId the client id
         * @return this builder
         */
        public Builder clientId(String clientId) {
            this.clientId = clientId;
            return this;
        }

        /**
         * The client secret, or {@code null} to look it up.
         *
         * @param clientSecret the client secret
         * @return this builder
         */
        public Builder clientSecret(String clientSecret) {
            this.clientSecret = clientSecret;
            return this;
        }

        /**
         * A rotating token file holding a Chalk JWT, or {@code null} to look it up.
         *
         * @param tokenFile the file
         * @return this builder
         */
        public Builder tokenFile(Path tokenFile) {
            this.tokenFile = tokenFile;
            return this;
        }

        /**
         * The Chalk API server URL, or {@code null} to look it up.
         *
         * @param apiServer a URL such as {@code https://api.chalk.ai}
         * @return this builder
         */
        public Builder apiServer(String apiServer) {
            this.apiServer = apiServer;
            return this;
        }

        /**
         * The environment (id or name) to act in, or {@code null} to look it up or let the token decide.
         *
         * @param environment the environment
         * @return this builder
         */
        public Builder environment(String environment) {
            this.environment = environment;
            return this;
        }

        /**
         * The environment variables to read instead of {@link System#getenv()}.
         *
         * @param env the variables; an empty map reads none
         * @return this builder
         */
        public Builder environmentVariables(Map<String, String> env) {
            this.env = Map.copyOf(Objects.requireNonNull(env, "env"));
            return this;
        }

        /**
         * The home directory holding {@code .chalk.yml}, instead of {@code user.home}; {@code null} skips the file
         * (unless {@code XDG_CONFIG_HOME} is set in the environment variables).
         *
         * @param homeDirectory the directory, or {@code null}
         * @return this builder
         */
        public Builder homeDirectory(Path homeDirectory) {
            this.homeDirectory = homeDirectory;
            this.homeDirectorySet = true;
            return this;
        }

        /**
         * The directory whose login to pick from {@code ~/.chalk.yml}, instead of {@code user.dir}.
         *
         * @param workingDirectory the directory
         * @return this builder
         */
        public Builder workingDirectory(Path workingDirectory) {
            this.workingDirectory = Objects.requireNonNull(workingDirectory, "workingDirectory");
            return this;
        }

        /**
         * Resolves the credentials. Finding none is not an error: check {@link ChalkCredentials#hasIdentity()}.
         *
         * @return the credentials
         * @throws FailedPreconditionException when {@code ~/.chalk.yml} is needed but cannot be read or parsed
         */
        public ChalkCredentials resolve() {
            Map<String, String> vars = env != null ? env : System.getenv();
            Path home = homeDirectorySet ? homeDirectory : Path.of(System.getProperty("user.home"));
            Path cwd = workingDirectory != null ? workingDirectory : Path.of(System.getProperty("user.dir"));

            // identity: from the highest source naming one; an explicit client id or secret may be completed
            // by the other half from the environment, nothing else is mixed across sources
            Optional<String> id = present(clientId);
            Optional<String> secret = present(clientSecret);
            Optional<Path> file = Optional.ofNullable(tokenFile);
            Optional<String> envId = present(vars.get(ENV_CLIENT_ID));
            Optional<String> envSecret = present(vars.get(ENV_CLIENT_SECRET));
            Optional<Path> envFile = present(vars.get(ENV_TOKEN_FILE)).map(Path::of);
            CredentialSource source;
            if (id.isPresent() || secret.isPresent()) {
                source = CredentialSource.EXPLICIT;
                id = id.or(() -> envId);
                secret = secret.or(() -> envSecret);
            } else if (file.isPresent()) {
                source = CredentialSource.EXPLICIT;
            } else if (envId.isPresent() || envSecret.isPresent() || envFile.isPresent()) {
                source = CredentialSource.ENVIRONMENT;
                id = envId;
                secret = envSecret;
                file = envFile;
            } else {
                source = CredentialSource.NONE;
            }

            Optional<String> server = present(apiServer).or(() -> present(vars.get(ENV_API_SERVER)));
            Optional<String> chosenEnvironment = present(environment)
                    .or(() -> present(vars.get(ENV_ENVIRONMENT)))
                    .or(() -> present(vars.get(ENV_ENVIRONMENT_ID)));
            Optional<Instant> validUntil = Optional.empty();

            if (source == CredentialSource.NONE) {
                Optional<Path> yml = ChalkYml.locate(vars, home);
                Optional<ChalkYml.Entry> entry = yml.flatMap(f -> ChalkYml.load(f, cwd));
                if (entry.isPresent() && entry.get().clientId().isPresent()) {
                    ChalkYml.Entry login = entry.get();
                    source = CredentialSource.CHALK_YML;
                    id = login.clientId();
                    secret = login.clientSecret();
                    server = server.or(login::apiServer);
                    chosenEnvironment = chosenEnvironment.or(login::activeEnvironment);
                    validUntil = login.validUntil();
                    if (validUntil.isPresent() && validUntil.get().isBefore(Instant.now())) {
                        log.warn(
                                "the Chalk login for '{}' in {} expired at {}; run 'chalk login'",
                                login.key(),
                                login.file(),
                                validUntil.get());
                    }
                }
            }
            ChalkCredentials resolved =
                    new ChalkCredentials(id, secret, file, server, chosenEnvironment, validUntil, source);
            log.debug("resolved {}", resolved);
            return resolved;
        }

        @Override
        public String toString() {
            return "ChalkCredentials.Builder[clientId=" + clientId
                    + ", clientSecret=" + (clientSecret == null ? "null" : "****")
                    + ", tokenFile=" + tokenFile + ", apiServer=" + apiServer + ", environment=" + environment + "]";
        }
    }
}
