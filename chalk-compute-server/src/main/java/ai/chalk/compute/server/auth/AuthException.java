package ai.chalk.compute.server.auth;

/**
 * A caller that could not be authenticated: no token, a token that is malformed, expired, not signed by this server,
 * or whose credential was revoked. The message says which, and what to do; it never quotes the token.
 */
public final class AuthException extends Exception {

    AuthException(String message) {
        super(message);
    }
}
