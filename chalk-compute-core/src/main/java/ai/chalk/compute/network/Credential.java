package ai.chalk.compute.network;

import ai.chalk.compute.secret.Secret;
import java.util.List;
import java.util.Objects;

/**
 * A credential that only some hosts receive ({@code add_credentials} of Chalk's SDK): the workload's environment
 * variable of the secret's name holds a placeholder, {@code CHALK_PLACEHOLDER_<NAME>}, and the egress proxy replaces
 * the placeholder by the secret's value where it appears in a header of a request to one of the hosts, and nowhere
 * else: not in the URL or the body, not for any other host. A redirect to another host carries the placeholder, never
 * the value. Adding a credential allows its hosts.
 *
 * <p>A host that echoes request headers back in its responses would hand the value to the workload: list only hosts
 * you trust with it.
 *
 * @param hosts  the hosts, exact names or {@code *.} wildcards
 * @param secret a Chalk secret ({@link Secret#fromChalkEnv}: the variable is its name) or a local variable
 *               ({@link Secret#fromLocalEnv}: the variable is the local one's name, the value saved as a managed secret
 *               when the workload is created)
 */
public record Credential(List<String> hosts, Secret secret) {

    /** The text a credential's variable holds: this prefix, then the variable's name. */
    public static final String PLACEHOLDER_PREFIX = "CHALK_PLACEHOLDER_";

    /** Checks the hosts and the secret and copies the list. */
    public Credential {
        hosts = List.copyOf(hosts);
        if (hosts.isEmpty()) {
            throw new IllegalArgumentException("a credential needs at least one host");
        }
        hosts.forEach(NetworkPolicy::checkHost);
        Objects.requireNonNull(secret, "secret");
        secretName(secret, "a credential");
    }

    /**
     * The environment variable that holds the placeholder: the secret's name, or the local variable's.
     *
     * @return the variable's name
     */
    public String variable() {
        return secret instanceof Secret.ChalkEnv c ? c.name() : ((Secret.LocalEnv) secret).variable();
    }

    /**
     * What the variable holds in the workload, and the proxy replaces in headers to the hosts.
     *
     * @return the placeholder
     */
    public String placeholder() {
        return PLACEHOLDER_PREFIX + variable();
    }

    /** The managed secret's name for a Chalk secret; empty for a local variable (saved when the workload starts). */
    static String secretName(Secret secret, String what) {
        if (secret instanceof Secret.ChalkEnv c) {
            return c.name();
        }
        if (secret instanceof Secret.LocalEnv) {
            return "";
        }
        throw new IllegalArgumentException(what + " must be a Chalk secret (Secret.fromChalkEnv) or a local variable"
                + " (Secret.fromLocalEnv); " + secret + " gives no single value the proxy could use");
    }
}
