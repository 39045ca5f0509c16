package ai.chalk.compute.git;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A user name and password for HTTPS remotes, and how one git command receives them: a credential helper set on its
 * command line prints two environment variables of that command. So the credentials appear neither in the command
 * line, nor in the remote URL, nor in the repository's configuration.
 *
 * @param username the user name
 * @param password the password or token
 */
record GitCredentials(String username, String password) {

    private static final String USERNAME_VARIABLE = "CHALK_GIT_USERNAME";
    private static final String PASSWORD_VARIABLE = "CHALK_GIT_PASSWORD";
    /** The credential helper: prints the two variables, for {@code get} requests only. */
    private static final String HELPER = "!f() { test \"$1\" = get || return 0; "
            + "printf 'username=%s\\npassword=%s\\n' \"$" + USERNAME_VARIABLE + "\" \"$" + PASSWORD_VARIABLE + "\"; "
            + "}; f";

    GitCredentials {
        Objects.requireNonNull(username, "username");
        Objects.requireNonNull(password, "password");
        // the helper prints them as lines of git's credential protocol, which has no escaping
        for (String value : Arrays.asList(username, password)) {
            if (value.indexOf('\n') >= 0 || value.indexOf('\0') >= 0) {
                throw new IllegalArgumentException("git credentials cannot contain newlines or NUL");
            }
        }
    }

    /**
     * The options that go before git's subcommand. An empty helper first drops any helper configured in the sandbox,
     * so nothing there stores the credentials.
     */
    List<String> configOptions() {
        return List.of("-c", "credential.helper=", "-c", "credential.helper=" + HELPER);
    }

    /** The environment variables the helper reads, set on the one command only. */
    Map<String, String> environment() {
        return Map.of(USERNAME_VARIABLE, username, PASSWORD_VARIABLE, password);
    }

    @Override
    public String toString() {
        return username + ":****";
    }
}
