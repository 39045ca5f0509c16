package ai.chalk.compute.server.auth;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.KeyUse;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.ParseException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Date;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The server's token signing keys (ECDSA P-256, ES256), kept in {@code <data-dir>/auth/signing-keys.json} with mode
 * 0600. Tokens are signed with the newest key; a new key is made once the newest is older than the rotation period,
 * and a retired key is kept until every token it signed has expired, so rotation never logs anyone out. The public
 * halves are the server's JWKS, which third parties fetch to verify workload identity tokens.
 */
final class SigningKeys {

    private final Path file;
    private final Duration rotation;
    private final Duration longestToken;
    private final Clock clock;
    private List<ECKey> keys; // newest first

    /**
     * @param rotation     how long a key signs before a new one takes over
     * @param longestToken the longest lifetime of a token this server issues: a retired key verifies that long
     */
    SigningKeys(Path file, Duration rotation, Duration longestToken, Clock clock) throws IOException {
        this.file = file;
        this.rotation = rotation;
        this.longestToken = longestToken;
        this.clock = clock;
        List<ECKey> loaded = new ArrayList<>();
        if (Files.exists(file)) {
            try {
                for (JWK k : JWKSet.parse(PrivateFiles.read(file)).getKeys()) {
                    if (k instanceof ECKey ec && ec.isPrivate() && ec.getIssueTime() != null) {
                        loaded.add(ec);
                    }
                }
            } catch (ParseException e) {
                throw new IOException(
                        file + " is not a JWK set (" + e.getMessage() + "); remove it and restart:"
                                + " new keys are made and tokens issued before must be fetched again",
                        e);
            }
        }
        loaded.sort(Comparator.comparing(ECKey::getIssueTime).reversed());
        this.keys = List.copyOf(loaded);
        rotateIfDue();
    }

    /** The key to sign with now, rotating first when the newest one is due. */
    synchronized ECKey current() {
        rotateIfDue();
        return keys.get(0);
    }

    /** The key with id {@code kid}, if this server still verifies with it. */
    synchronized Optional<ECKey> find(String kid) {
        return keys.stream().filter(k -> k.getKeyID().equals(kid)).findFirst();
    }

    /** The public halves of every key that still verifies: the JWKS. */
    synchronized JWKSet publicKeys() {
        return new JWKSet(new ArrayList<JWK>(keys)).toPublicJWKSet();
    }

    private synchronized void rotateIfDue() {
        Instant now = clock.instant();
        if (!keys.isEmpty()
                && keys.get(0).getIssueTime().toInstant().plus(rotation).isAfter(now)) {
            return;
        }
        List<ECKey> next = new ArrayList<>();
        try {
            next.add(new ECKeyGenerator(Curve.P_256)
                    .keyUse(KeyUse.SIGNATURE)
                    .keyID(UUID.randomUUID().toString())
                    .issueTime(Date.from(now))
                    .generate());
        } catch (JOSEException e) {
            throw new IllegalStateException("cannot make a signing key: " + e.getMessage(), e);
        }
        // a key retired at t signed tokens until t; they expire by t + longestToken
        Instant retiredAt = now;
        for (ECKey k : keys) {
            if (retiredAt.plus(longestToken).isAfter(now)) {
                next.add(k);
            }
            retiredAt = k.getIssueTime().toInstant();
        }
        try {
            PrivateFiles.write(file, new JWKSet(new ArrayList<JWK>(next)).toString(false));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot save the signing keys in " + file, e);
        }
        keys = List.copyOf(next);
    }
}
