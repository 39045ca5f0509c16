package ai.chalk.compute.server.auth;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.crypto.ECDSAVerifier;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.text.ParseException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * Issues and verifies the server's JWTs (ES256, signed by {@link SigningKeys}): access tokens for clients and
 * workloads ({@value #ACCESS_AUDIENCE} audience), and workload identity tokens for third parties (their own
 * audience, verifiable with the server's JWKS).
 */
public final class Tokens {

    /** The audience of tokens this server accepts as bearer tokens. */
    static final String ACCESS_AUDIENCE = "chalk-compute";

    static final String ENVIRONMENT_CLAIM = "env";
    /** What Chalk's SDKs read to choose the environment of a token file's calls ({@code x-chalk-env-id}). */
    static final String ENVIRONMENT_ID_CLAIM = "environment_id";

    static final String KIND_CLAIM = "kind";
    static final String CLIENT_CLAIM = "cid";
    /** Tolerated clock difference between the server and itself across restarts (and a token's own iat). */
    private static final Duration SKEW = Duration.ofSeconds(30);

    private final SigningKeys keys;
    private final Clock clock;
    private volatile String issuer;

    Tokens(SigningKeys keys, Clock clock, String issuer) {
        this.keys = keys;
        this.clock = clock;
        this.issuer = issuer;
    }

    /** What a token says, once verified. */
    record Claims(Caller caller, Optional<String> clientId, Instant expiresAt) {}

    /** A signed token and when it expires. */
    public record Issued(String token, Instant expiresAt) {
        /** Without the token, which is a credential. */
        @Override
        public String toString() {
            return "Issued[token=****, expiresAt=" + expiresAt + "]";
        }
    }

    /** The issuer ({@code iss}) of this server's tokens: the URL its JWKS is found under. */
    public String issuer() {
        return issuer;
    }

    void issuer(String issuer) {
        this.issuer = issuer;
    }

    /** An access token for {@code caller}, valid for {@code lifetime}. */
    Issued access(Caller caller, Optional<String> clientId, Duration lifetime) {
        JWTClaimsSet.Builder claims = base(caller.subject(), ACCESS_AUDIENCE, lifetime)
                .claim(ENVIRONMENT_CLAIM, caller.environment())
                .claim(ENVIRONMENT_ID_CLAIM, caller.environment())
                .claim(KIND_CLAIM, caller.kind().name());
        clientId.ifPresent(id -> claims.claim(CLIENT_CLAIM, id));
        return sign(claims.build());
    }

    /** An identity token for a third party: {@code sub} the workload, {@code aud} as asked. */
    Issued identity(Caller workload, String audience, Duration lifetime) {
        return sign(base(workload.subject(), audience, lifetime)
                .claim(ENVIRONMENT_CLAIM, workload.environment())
                .claim(ENVIRONMENT_ID_CLAIM, workload.environment())
                .build());
    }

    private JWTClaimsSet.Builder base(String subject, String audience, Duration lifetime) {
        Instant now = clock.instant();
        return new JWTClaimsSet.Builder()
                .issuer(issuer)
                .subject(subject)
                .audience(audience)
                .issueTime(Date.from(now))
                .notBeforeTime(Date.from(now.minus(SKEW)))
                .expirationTime(Date.from(now.plus(lifetime)))
                .jwtID(UUID.randomUUID().toString());
    }

    private Issued sign(JWTClaimsSet claims) {
        ECKey key = keys.current();
        SignedJWT jwt = new SignedJWT(
                new JWSHeader.Builder(JWSAlgorithm.ES256)
                        .keyID(key.getKeyID())
                        .type(JOSEObjectType.JWT)
                        .build(),
                claims);
        try {
            jwt.sign(new ECDSASigner(key));
        } catch (JOSEException e) {
            throw new IllegalStateException("cannot sign a token: " + e.getMessage(), e);
        }
        return new Issued(jwt.serialize(), claims.getExpirationTime().toInstant());
    }

    /**
     * Verifies an access token: signed by one of this server's keys, issued by it for {@value #ACCESS_AUDIENCE},
     * within its lifetime.
     *
     * @throws AuthException saying why the token is refused (never quoting it)
     */
    Claims verify(String token) throws AuthException {
        SignedJWT jwt;
        JWTClaimsSet claims;
        try {
            jwt = SignedJWT.parse(token);
            claims = jwt.getJWTClaimsSet();
        } catch (ParseException e) {
            throw new AuthException("the bearer token is not a JWT");
        }
        String kid = jwt.getHeader().getKeyID();
        Optional<ECKey> key = kid == null ? Optional.empty() : keys.find(kid);
        try {
            if (!JWSAlgorithm.ES256.equals(jwt.getHeader().getAlgorithm())
                    || key.isEmpty()
                    || !jwt.verify(new ECDSAVerifier(key.get().toECPublicKey()))) {
                throw new AuthException("the bearer token was not issued by this server (or by a data directory"
                        + " that has since been reset): get a new one with your client credentials");
            }
        } catch (JOSEException e) {
            throw new AuthException("the bearer token's signature cannot be checked: " + e.getMessage());
        }
        Instant now = clock.instant();
        Date exp = claims.getExpirationTime();
        if (exp == null || !exp.toInstant().plus(SKEW).isAfter(now)) {
            throw new AuthException("the bearer token expired" + (exp == null ? "" : " at " + exp.toInstant())
                    + ": get a new one with your client credentials (the SDK does this by itself when it has them)");
        }
        // the issuer is not compared: it names the HTTP port, which may change across restarts, while the keys
        // (which the signature was checked against) stay with the data directory
        List<String> audience = claims.getAudience();
        if (audience == null || !audience.contains(ACCESS_AUDIENCE)) {
            throw new AuthException("the token is not an access token of this server (an identity token for"
                    + " another audience cannot be used as one)");
        }
        try {
            String environment = claims.getStringClaim(ENVIRONMENT_CLAIM);
            Caller.Kind kind = Caller.Kind.valueOf(claims.getStringClaim(KIND_CLAIM));
            return new Claims(
                    new Caller(environment, claims.getSubject(), kind),
                    Optional.ofNullable(claims.getStringClaim(CLIENT_CLAIM)),
                    exp.toInstant());
        } catch (ParseException | IllegalArgumentException | NullPointerException e) {
            throw new AuthException("the bearer token lacks its environment or kind");
        }
    }
}
