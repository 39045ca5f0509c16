package ai.chalk.compute.secret;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The secrets one sandbox, scaling group or function receives: some bound to an environment variable each, some in
 * bulk. An immutable value; {@link SecretsClient#references(SecretBindings)} turns it into the references the server
 * resolves. Its {@code toString} names secrets only.
 *
 * @param env  environment variable name to the secret giving its value, in declaration order
 * @param bulk secrets giving each of their values under its own name, in declaration order
 */
public record SecretBindings(Map<String, Secret> env, List<Secret> bulk) {

    /** No secrets. */
    public static final SecretBindings NONE = new SecretBindings(Map.of(), List.of());

    /** Checks the bindings and copies the collections. */
    public SecretBindings {
        Map<String, Secret> copy = new LinkedHashMap<>();
        env.forEach((name, secret) -> {
            if (name == null || !Secret.ENV_NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("environment variable name \"" + name + "\" must be letters,"
                        + " digits and '_', not starting with a digit");
            }
            Objects.requireNonNull(secret, () -> "secret of " + name);
            if (secret instanceof Secret.LocalEnvFile) {
                throw new IllegalArgumentException(name + ": Secret.fromLocalEnvFile gives many values; pass it to"
                        + " secrets(...) instead of binding it to one variable");
            }
            if (secret instanceof Secret.ChalkIntegration i && i.keys().size() != 1) {
                throw new IllegalArgumentException(name + ": integration " + i.name() + " bound to one variable must"
                        + " select exactly one key, as Secret.fromChalkIntegration(\"" + i.name() + "\", \"KEY\");"
                        + " pass it to secrets(...) for several");
            }
            copy.put(name, secret);
        });
        env = Collections.unmodifiableMap(copy);
        bulk.forEach(s -> Objects.requireNonNull(s, "bulk secret"));
        bulk = List.copyOf(bulk);
    }

    /**
     * Secrets named by strings, as {@code @ChalkFunction(secrets = ...)} lists them: {@code "NAME"} gives the managed
     * secret NAME under its own name, {@code "VAR=NAME"} gives it as the variable VAR.
     *
     * @param names the entries
     * @return the bindings
     * @throws IllegalArgumentException for a malformed entry
     */
    public static SecretBindings ofNames(List<String> names) {
        Map<String, Secret> env = new LinkedHashMap<>();
        List<Secret> bulk = new ArrayList<>();
        for (String entry : names) {
            int eq = entry.indexOf('=');
            if (eq < 0) {
                bulk.add(Secret.fromChalkEnv(entry.trim()));
            } else if (env.put(
                            entry.substring(0, eq).trim(),
                            Secret.fromChalkEnv(entry.substring(eq + 1).trim()))
                    != null) {
                throw new IllegalArgumentException(
                        "secrets bind " + entry.substring(0, eq).trim() + " twice");
            }
        }
        return new SecretBindings(env, bulk);
    }

    /**
     * These bindings and one more variable.
     *
     * @param name   the environment variable's name
     * @param secret the secret giving its value
     * @return the new bindings
     */
    public SecretBindings with(String name, Secret secret) {
        Map<String, Secret> next = new LinkedHashMap<>(env);
        next.put(name, secret);
        return new SecretBindings(next, bulk);
    }

    /**
     * These bindings and more bulk secrets.
     *
     * @param secrets the secrets
     * @return the new bindings
     */
    public SecretBindings withBulk(List<Secret> secrets) {
        List<Secret> next = new ArrayList<>(bulk);
        next.addAll(secrets);
        return new SecretBindings(env, next);
    }

    /** Whether there are no secrets at all. */
    public boolean isEmpty() {
        return env.isEmpty() && bulk.isEmpty();
    }

    /** Every secret, bound ones first. */
    public List<Secret> all() {
        List<Secret> all = new ArrayList<>(env.values());
        all.addAll(bulk);
        return all;
    }

    /**
     * Whether a function version using these secrets may be reused when nothing else changed: only when each is a
     * managed Chalk secret (see {@link Secret#allowsVersionReuse()}).
     *
     * @return whether reuse is allowed
     */
    public boolean allowVersionReuse() {
        return all().stream().allMatch(Secret::allowsVersionReuse);
    }
}
