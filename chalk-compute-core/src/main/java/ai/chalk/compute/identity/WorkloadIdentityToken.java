package ai.chalk.compute.identity;

import java.time.Instant;
import java.util.Objects;

/**
 * An OIDC identity token for a third party, as {@link ConnectClient#getWorkloadIdentityToken} returns it: a JWT signed
 * by the server, whose public keys are at {@code <issuer>/.well-known/jwks.json}.
 *
 * @param token     the JWT to hand to the third party (never shown by {@link #toString()})
 * @param expiresAt when it stops being valid
 * @param issuer    the token's {@code iss}: the server's URL
 * @param subject   the token's {@code sub}: who the caller is (a client credential, a function, a sandbox)
 */
public record WorkloadIdentityToken(String token, Instant expiresAt, String issuer, String subject) {

    public WorkloadIdentityToken {
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(expiresAt, "expiresAt");
        Objects.requireNonNull(issuer, "issuer");
        Objects.requireNonNull(subject, "subject");
    }

    @Override
    public String toString() {
        return "WorkloadIdentityToken[issuer=" + issuer + ", subject=" + subject + ", expiresAt=" + expiresAt
                + ", token=****]";
    }
}
