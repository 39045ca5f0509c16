package ai.chalk.compute.server.auth;

import ai.chalk.compute.server.http.HttpPort;
import io.grpc.ServerInterceptor;
import io.grpc.ServerServiceDefinition;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A server's authentication: its signing keys and tokens, its client credentials, the interceptor that tells who a TCP
 * caller is, {@code AuthService}, and the JWKS it publishes. Kept under {@code <data-dir>/auth} (mode 0700).
 */
public final class Authentication {

    private static final Logger log = LoggerFactory.getLogger(Authentication.class);
    /** How long a signing key signs before the next one takes over. */
    static final Duration KEY_ROTATION = Duration.ofDays(30);
    /** The name of the file the first credential is written to, in the data directory. */
    public static final String CREDENTIALS_FILE = "credentials.yml";

    /** Whether TCP callers must prove who they are. */
    public enum Mode {
        /** Bearer tokens from {@code AuthService/GetToken} (the default). */
        TOKENS,
        /** No proof: every TCP caller is trusted; only on loopback, with a warning. */
        NONE
    }

    private final Mode mode;
    private final Path dataDir;
    private final Tokens tokens;
    private final ClientCredentials credentials;
    private final FailedAttempts failures;
    private final ScheduledExecutorService timers;
    private final SigningKeys keys;
    private final WorkloadTokens workloads;
    private volatile Optional<String> grpcUrl = Optional.empty();

    private Authentication(
            Mode mode,
            Path dataDir,
            SigningKeys keys,
            ClientCredentials credentials,
            Clock clock,
            ScheduledExecutorService timers)
            throws IOException {
        this.mode = mode;
        this.dataDir = dataDir;
        this.keys = keys;
        this.tokens = new Tokens(keys, clock, "chalk-compute");
        this.credentials = credentials;
        this.failures = new FailedAttempts(clock);
        this.timers = timers;
        this.workloads = new WorkloadTokens(tokens, dataDir.resolve("identity"), timers);
    }

    /**
     * Opens (or makes, on first start) the keys and credentials under {@code <dataDir>/auth}.
     *
     * @param timers the server's timer thread, which holds back answers to peers that keep failing
     */
    public static Authentication open(Mode mode, Path dataDir, Clock clock, ScheduledExecutorService timers)
            throws IOException {
        Path dir = PrivateFiles.directory(dataDir.resolve("auth"));
        SigningKeys keys =
                new SigningKeys(dir.resolve("signing-keys.json"), KEY_ROTATION, AuthServiceV1.LONGEST_ACCESS, clock);
        return new Authentication(mode, dataDir, keys, new ClientCredentials(dir, clock), clock, timers);
    }

    /** Whether TCP callers must prove who they are. */
    public Mode mode() {
        return mode;
    }

    /** The server's client credentials (what the {@code credentials} command manages too). */
    public ClientCredentials credentials() {
        return credentials;
    }

    /** Issues the server's tokens. */
    public Tokens tokens() {
        return tokens;
    }

    /** The rotating token files of deployed code. */
    public WorkloadTokens workloads() {
        return workloads;
    }

    /** The interceptor that tells who a TCP caller is. */
    public ServerInterceptor tcpCallers() {
        if (mode == Mode.NONE) {
            return new TrustedCallers(Caller.Kind.UNAUTHENTICATED);
        }
        return new BearerTokens(
                tokens,
                Caller.Kind.CLIENT,
                credentials::active,
                workloads::live,
                "exchange your client credentials"
                        + " for one with AuthService/GetToken (the SDK does this when CHALK_CLIENT_ID and CHALK_CLIENT_SECRET"
                        + " are set, or from ~/.chalk.yml); the server's first credential is in "
                        + dataDir.resolve(CREDENTIALS_FILE));
    }

    /**
     * The interceptor for deployed code on the replicas' socket: every caller shows the workload token the server
     * gave it, whatever the server's mode (the socket is reachable from every replica of every environment).
     */
    public ServerInterceptor workloadCallers() {
        return new BearerTokens(
                tokens,
                Caller.Kind.WORKLOAD,
                credentials::active,
                workloads::live,
                "deployed code reads its token from"
                        + " the file CHALK_WEB_IDENTITY_TOKEN_FILE names (the SDK does this by itself)");
    }

    /** {@code chalk.server.v1.AuthService}. */
    public ServerServiceDefinition service() {
        return new AuthServiceV1(credentials, tokens, failures, timers, () -> grpcUrl).definition();
    }

    /**
     * Publishes the JWKS and OpenID configuration on {@code http}, whose URL becomes the issuer of the server's
     * tokens, and records the gRPC URL clients are told to use.
     */
    public void publish(HttpPort http, Optional<String> grpcUrl) {
        this.grpcUrl = grpcUrl;
        tokens.issuer(http.url());
        http.document(
                "/.well-known/jwks.json",
                "application/json",
                () -> keys.publicKeys().toString());
        http.document(
                "/.well-known/openid-configuration",
                "application/json",
                () -> "{\"issuer\":\""
                        + http.url() + "\",\"jwks_uri\":\"" + http.url() + "/.well-known/jwks.json\","
                        + "\"id_token_signing_alg_values_supported\":[\"ES256\"],\"response_types_supported\":[\"id_token\"],"
                        + "\"subject_types_supported\":[\"public\"]}");
    }

    /**
     * On a server that requires tokens and has no credential yet, makes the {@code admin} credential of environment
     * {@value Caller#DEFAULT_ENVIRONMENT} and writes it, mode 0600, in {@code ~/.chalk.yml}'s format to
     * {@code <data-dir>/credentials.yml}.
     */
    public void firstCredential() throws IOException {
        if (mode != Mode.TOKENS || !credentials.none()) {
            return;
        }
        ClientCredentials.Created admin = credentials.create("admin", Caller.DEFAULT_ENVIRONMENT);
        Path file = dataDir.resolve(CREDENTIALS_FILE);
        PrivateFiles.write(file, ChalkYmlEntry.render(admin, grpcUrl.orElse("")));
        log.info(
                "Made the first client credential ({}, environment {}) and wrote it to {}: copy it to ~/.chalk.yml,"
                        + " or point CHALK_CLIENT_ID and CHALK_CLIENT_SECRET at its values",
                admin.credential().id(),
                Caller.DEFAULT_ENVIRONMENT,
                file);
    }

    /** Whether the first credential's file is there (it is only written once). */
    boolean credentialsFileExists() {
        return Files.exists(dataDir.resolve(CREDENTIALS_FILE));
    }
}
