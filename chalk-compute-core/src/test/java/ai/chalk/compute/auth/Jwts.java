package ai.chalk.compute.auth;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.Date;

/** Test JWTs signed with a test HMAC key, and token files rotated on disk the way Kubernetes does. */
final class Jwts {

    private static final byte[] KEY = "a-test-hmac-key-of-at-least-256-bits!!".getBytes(StandardCharsets.UTF_8);

    private Jwts() {}

    /** A signed JWT; {@code exp} and {@code environmentId} may be {@code null} to leave the claim out. */
    static String jwt(String subject, Instant exp, String environmentId) {
        JWTClaimsSet.Builder claims = new JWTClaimsSet.Builder()
                .subject(subject)
                .issuer("https://api.chalk.test")
                .issueTime(new Date());
        if (exp != null) {
            claims.expirationTime(Date.from(exp));
        }
        if (environmentId != null) {
            claims.claim(TokenFileSource.ENVIRONMENT_CLAIM, environmentId);
        }
        SignedJWT jwt = new SignedJWT(new JWSHeader(JWSAlgorithm.HS256), claims.build());
        try {
            jwt.sign(new MACSigner(KEY));
        } catch (JOSEException e) {
            throw new IllegalStateException(e);
        }
        return jwt.serialize();
    }

    /** Replaces the file's contents atomically (write aside, then rename), with a trailing newline. */
    static void rotate(Path file, String token) {
        try {
            Path tmp = Files.createTempFile(file.getParent(), ".token", ".tmp");
            Files.writeString(tmp, token + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
