package ai.chalk.compute.server.auth;

import com.nimbusds.jwt.SignedJWT;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.text.ParseException;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The caller of a transport that requires proof: an {@code authorization: Bearer <token>} header holding an access
 * token of this server. A call without one, or with one that is malformed, expired, foreign or whose credential was
 * revoked, is refused with UNAUTHENTICATED saying what to do; the token names the environment the call acts in, and a
 * {@code x-chalk-env-id} header naming another is refused with PERMISSION_DENIED. Exchanging credentials and health
 * checks need no token.
 */
public final class BearerTokens implements ServerInterceptor {

    /** The header a call presents its token in ({@code Bearer <token>}). */
    public static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
    /** Methods anyone may call: how a token is got, and whether the server is up. */
    private static final Set<String> OPEN = Set.of(
            "chalk.server.v1.AuthService/GetToken", "grpc.health.v1.Health/Check", "grpc.health.v1.Health/Watch");

    /**
     * The environment the token in an {@code authorization} header claims, not verified: only for telling callers
     * apart before authentication has run (a transport's budgets), never for granting anything; empty when the header
     * holds no token of this server's form.
     */
    public static Optional<String> claimedEnvironment(String header) {
        String token = header.regionMatches(true, 0, "Bearer ", 0, 7)
                ? header.substring(7).strip()
                : header;
        try {
            return Optional.ofNullable(
                    SignedJWT.parse(token).getJWTClaimsSet().getStringClaim(Tokens.ENVIRONMENT_CLAIM));
        } catch (ParseException e) {
            return Optional.empty();
        }
    }

    /**
     * The workload a token's claims name (its environment and subject), read without checking the token: for telling
     * workloads apart before the call is authenticated (a forged token fails authentication before the call runs).
     */
    public static Optional<Caller> claimedWorkload(String header) {
        String token = header.regionMatches(true, 0, "Bearer ", 0, 7)
                ? header.substring(7).strip()
                : header;
        try {
            var claims = SignedJWT.parse(token).getJWTClaimsSet();
            String environment = claims.getStringClaim(Tokens.ENVIRONMENT_CLAIM);
            return environment == null || claims.getSubject() == null
                    ? Optional.empty()
                    : Optional.of(new Caller(environment, claims.getSubject(), Caller.Kind.WORKLOAD));
        } catch (ParseException | IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    /** Whether anyone may call {@code fullMethodName}, with no token: the token exchange and health checks. */
    public static boolean open(String fullMethodName) {
        return OPEN.contains(fullMethodName);
    }

    private final Tokens tokens;
    private final Caller.Kind accepted;
    private final Predicate<String> activeClient;
    private final Predicate<Caller> liveWorkload;
    private final String howToGetOne;

    /**
     * @param accepted     the one kind of token this transport takes: a workload's token, which deployed code can
     *                     read, is good on the socket made for deployed code only, where its rights are limited, and a
     *                     client's on the TCP port only
     * @param activeClient whether a client id is still active (tokens of a revoked credential stop working)
     * @param liveWorkload whether a workload is still issued (tokens of one that ended stop working)
     * @param howToGetOne  the sentence telling a user where their credentials are
     */
    BearerTokens(
            Tokens tokens,
            Caller.Kind accepted,
            Predicate<String> activeClient,
            Predicate<Caller> liveWorkload,
            String howToGetOne) {
        this.tokens = tokens;
        this.accepted = accepted;
        this.activeClient = activeClient;
        this.liveWorkload = liveWorkload;
        this.howToGetOne = howToGetOne;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        if (OPEN.contains(call.getMethodDescriptor().getFullMethodName())) {
            Caller anonymous = new Caller(Caller.DEFAULT_ENVIRONMENT, "anonymous", Caller.Kind.UNAUTHENTICATED);
            return Contexts.interceptCall(Context.current().withValue(Caller.KEY, anonymous), call, headers, next);
        }
        String header = headers.get(AUTHORIZATION);
        Tokens.Claims claims;
        try {
            if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7) || header.length() == 7) {
                throw new AuthException(
                        "this server requires an access token (authorization: Bearer <token>); " + howToGetOne);
            }
            claims = tokens.verify(header.substring(7).strip());
            if (claims.caller().kind() != accepted) {
                throw new AuthException(
                        accepted == Caller.Kind.CLIENT
                                ? "a workload's token is good on the server's socket for deployed code only; "
                                        + howToGetOne
                                : "only deployed code's own tokens are taken here; " + howToGetOne);
            }
            if (claims.caller().kind() == Caller.Kind.WORKLOAD && !liveWorkload.test(claims.caller())) {
                throw new AuthException("the workload " + claims.caller().subject() + " this token was given to has"
                        + " ended; a running workload reads its current token from the file"
                        + " CHALK_WEB_IDENTITY_TOKEN_FILE names");
            }
            if (claims.clientId().isPresent()
                    && !activeClient.test(claims.clientId().get())) {
                throw new AuthException("the credential " + claims.clientId().get() + " that got this token was"
                        + " revoked; use another one");
            }
        } catch (AuthException e) {
            // not slowed down like wrong secrets (AuthService): a token cannot be guessed, only stolen or expired
            call.close(Status.UNAUTHENTICATED.withDescription(e.getMessage()), new Metadata());
            return new ServerCall.Listener<>() {};
        }
        String named = headers.get(TrustedCallers.ENVIRONMENT_HEADER);
        Caller caller = claims.caller();
        if (named != null && !named.isBlank() && !named.strip().equals(caller.environment())) {
            call.close(
                    Status.PERMISSION_DENIED.withDescription("this token acts in environment "
                            + caller.environment() + ", and x-chalk-env-id names " + named.strip()
                            + ": use a credential of that environment"),
                    new Metadata());
            return new ServerCall.Listener<>() {};
        }
        return Contexts.interceptCall(Context.current().withValue(Caller.KEY, caller), call, headers, next);
    }
}
