package ai.chalk.compute.auth;

import ai.chalk.compute.error.AuthenticationException;
import com.nimbusds.jwt.JWT;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.JWTParser;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.text.ParseException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a directly usable Chalk JWT from a rotating workload-identity token file, as named by
 * {@code CHALK_WEB_IDENTITY_TOKEN_FILE} (a Chalk sandbox created with a Chalk identity receives one).
 *
 * <pre>{@code
 * TokenSource tokens = TokenFileSource.of(Path.of("/var/run/secrets/chalk/identity-token"));
 * }</pre>
 *
 * <p>As in Chalk's SDK, a token is cached for the shorter of {@linkplain #MAX_CACHE one hour} or half of its
 * remaining lifetime according to its {@code exp} claim (one hour when it has none); the file is then re-read
 * on the next call. A changed path bypasses the cache. The token's {@value #ENVIRONMENT_CLAIM} claim selects the
 * environment unless one is {@linkplain Builder#environment(String) set explicitly}. If the file cannot be read
 * when a refresh is due, the previous token is used until its {@code exp}.
 *
 * <p>The JWT's signature is not checked here (the server verifies it); it is parsed only for its claims. The
 * token and the file's contents never appear in logs, messages or {@link #toString()}.
 */
public final class TokenFileSource implements TokenSource {

    /** The longest a token is cached before the file is read again. */
    public static final Duration MAX_CACHE = Duration.ofHours(1);
    /** The claim naming the token's environment. */
    public static final String ENVIRONMENT_CLAIM = "environment_id";

    private static final Logger log = LoggerFactory.getLogger(TokenFileSource.class);

    private final Supplier<Path> path;
    private final Optional<String> environment;
    private final Clock clock;
    private final ReentrantLock lock = new ReentrantLock();
    private Cached cached;

    private record Cached(Path path, AccessToken token, Instant readAt, Instant cacheUntil) {}

    private TokenFileSource(Builder b) {
        this.path = b.path;
        this.environment = Optional.ofNullable(b.environment);
        this.clock = b.clock;
    }

    /**
     * A source reading the given file, with the environment taken from the token.
     *
     * @param tokenFile the file holding the JWT
     * @return the source; the file is first read on the first {@link #token()}
     */
    public static TokenFileSource of(Path tokenFile) {
        return builder().path(tokenFile).build();
    }

    /**
     * Starts configuring a source.
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public AccessToken token() {
        lock.lock();
        try {
            Path file = currentPath();
            Instant now = clock.instant();
            Cached current = cached;
            if (current != null && current.path().equals(file) && now.isBefore(current.cacheUntil())) {
                return current.token();
            }
            if (current != null && !current.path().equals(file)) {
                log.debug("the identity token file changed from {} to {}; reading the new one", current.path(), file);
            }
            try {
                cached = read(file, now);
            } catch (AuthenticationException e) {
                if (current != null
                        && current.path().equals(file)
                        && current.token().expiresAt().map(now::isBefore).orElse(false)) {
                    log.warn(
                            "{}; using the token read at {} until it expires at {}",
                            e.getMessage(),
                            current.readAt(),
                            current.token().expiresAt().get());
                    return current.token();
                }
                throw e;
            }
            return cached.token();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void invalidate(AccessToken rejected) {
        lock.lock();
        try {
            if (cached != null && cached.token().equals(rejected)) {
                log.debug("a server rejected the token from {}; re-reading the file on the next call", cached.path());
                cached = null;
            }
        } finally {
            lock.unlock();
        }
    }

    private Path currentPath() {
        Path file = path.get();
        if (file == null) {
            throw new AuthenticationException(
                    Status.Code.UNAUTHENTICATED,
                    "no Chalk identity token file is configured (" + ChalkCredentials.ENV_TOKEN_FILE + ")",
                    null);
        }
        return file;
    }

    private Cached read(Path file, Instant now) {
        String content;
        try {
            content = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (NoSuchFileException e) {
            throw unusable(file, "no such file");
        } catch (AccessDeniedException e) {
            throw unusable(file, "permission denied");
        } catch (IOException e) {
            throw unusable(file, "cannot read it (" + e.getClass().getSimpleName() + ")");
        }
        if (content.isEmpty()) {
            throw unusable(file, "it is empty");
        }
        JWTClaimsSet claims;
        try {
            JWT jwt = JWTParser.parse(content);
            claims = jwt.getJWTClaimsSet();
        } catch (ParseException e) {
            // the parser's message may quote part of the token: never pass it on
            throw unusable(file, "it does not hold a JWT");
        }
        Optional<Instant> expiresAt = Optional.empty();
        Optional<String> claimedEnvironment = Optional.empty();
        if (claims != null) {
            Date exp = claims.getExpirationTime();
            expiresAt = Optional.ofNullable(exp).map(Date::toInstant);
            Object env = claims.getClaim(ENVIRONMENT_CLAIM);
            if (env != null && !env.toString().isBlank()) {
                claimedEnvironment = Optional.of(env.toString().trim());
            }
        }
        Duration cacheFor = MAX_CACHE;
        if (expiresAt.isPresent()) {
            Duration remaining = Duration.between(now, expiresAt.get());
            if (remaining.isNegative() || remaining.isZero()) {
                log.warn(
                        "the identity token in {} expired at {}; it is re-read on every call until it is rotated",
                        file,
                        expiresAt.get());
                cacheFor = Duration.ZERO;
            } else if (remaining.dividedBy(2).compareTo(MAX_CACHE) < 0) {
                cacheFor = remaining.dividedBy(2);
            }
        }
        Optional<String> env = environment.isPresent() ? environment : claimedEnvironment;
        AccessToken token = new AccessToken(content, env, expiresAt);
        Instant cacheUntil = now.plus(cacheFor);
        log.debug(
                "read the identity token from {}: expires {}, environment {}; re-reading after {}",
                file,
                expiresAt.map(Instant::toString).orElse("never (no exp claim)"),
                env.orElse("<server default>"),
                cacheUntil);
        return new Cached(file, token, now, cacheUntil);
    }

    private static AuthenticationException unusable(Path file, String why) {
        return new AuthenticationException(
                Status.Code.UNAUTHENTICATED, "cannot use the Chalk identity token file " + file + ": " + why, null);
    }

    /** Shows the file and environment; never the token. */
    @Override
    public String toString() {
        Path file;
        try {
            file = path.get();
        } catch (RuntimeException e) {
            file = null;
        }
        return "TokenFileSource[path=" + file
                + environment.map(e -> ", environment=" + e).orElse("") + "]";
    }

    /** Configures a {@link TokenFileSource}. Not thread-safe. */
    public static final class Builder {
        private Supplier<Path> path;
        private String environment;
        private Clock clock = Clock.systemUTC();

        private Builder() {}

        /**
         * The token file.
         *
         * @param tokenFile the file holding the JWT
         * @return this builder
         */
        public Builder path(Path tokenFile) {
            Objects.requireNonNull(tokenFile, "tokenFile");
            this.path = () -> tokenFile;
            return this;
        }

        /**
         * Where the token file is, asked on every call: when the answer changes, the new file is read at once
         * instead of serving the cached token.
         *
         * @param tokenFile supplies the current path
         * @return this builder
         */
        public Builder path(Supplier<Path> tokenFile) {
            this.path = Objects.requireNonNull(tokenFile, "tokenFile");
            return this;
        }

        /**
         * The environment to act in, overriding the token's {@code environment_id} claim.
         *
         * @param environment an environment id or name, or {@code null} to use the claim
         * @return this builder
         */
        public Builder environment(String environment) {
            this.environment = environment == null || environment.isBlank() ? null : environment.trim();
            return this;
        }

        /**
         * The clock deciding when to re-read the file (tests use an adjustable one).
         *
         * @param clock the clock
         * @return this builder
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Builds the source; the file is first read on the first {@link TokenSource#token()}.
         *
         * @return the source
         * @throws IllegalStateException when no path is set
         */
        public TokenFileSource build() {
            if (path == null) {
                throw new IllegalStateException("no token file set: call path(...)");
            }
            return new TokenFileSource(this);
        }
    }
}
