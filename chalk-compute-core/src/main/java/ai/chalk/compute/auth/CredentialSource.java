package ai.chalk.compute.auth;

/**
 * Where the identity in a {@link ChalkCredentials} came from, highest precedence first.
 */
public enum CredentialSource {
    /** Given in code or configuration, for example a Spring {@code application.yml}. */
    EXPLICIT,
    /** Read from environment variables such as {@code CHALK_CLIENT_ID} or {@code CHALK_WEB_IDENTITY_TOKEN_FILE}. */
    ENVIRONMENT,
    /** Read from the Chalk CLI's {@code ~/.chalk.yml}, written by {@code chalk login}. */
    CHALK_YML,
    /** No identity was found anywhere. */
    NONE
}
