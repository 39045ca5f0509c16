package ai.chalk.compute.secret;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A secret that a sandbox, scaling group or function receives as environment variables, named here rather than
 * written out: the value is read where the secret lives, when the workload starts (Chalk secrets and integrations),
 * or from this process when the workload is created or deployed (local ones).
 * <pre>{@code
 * Sandbox sandbox = Sandbox.builder()
 *         .env("GIT_AUTHOR_NAME", "Elliot Marx")                         // a literal
 *         .env("OPENAI_API_KEY", Secret.fromChalkEnv("OPENAI_KEY"))      // a secret of the environment
 *         .env("PGPASSWORD", Secret.fromChalkIntegration("postgres", "PASSWORD"))
 *         .secrets(Secret.fromLocalEnvFile(Path.of(".env")))             // every entry of a local dotenv file
 *         .build();
 * }</pre>
 *
 * <p>A secret bound to a variable ({@code env(name, secret)}) gives exactly one value: a Chalk secret, a local
 * variable, or one key of an integration. In bulk ({@code secrets(...)}) a secret gives each of its values under its
 * own name: a Chalk secret or a local variable under its name, an integration under each selected key (all its keys
 * when none are selected), a dotenv file under each of its keys. {@code Image.env} and per-exec environments take
 * literal strings only: put secrets on the sandbox or deployment, and its processes inherit them.
 *
 * <p>How local values travel: the SDK reads them when the sandbox is created or the group or function deployed, and
 * saves each one as a managed secret of the environment (encrypted at rest by the server) named
 * {@code CHALK_LOCAL_<VARIABLE>_<random>}, which the workload then references. So a local value is never part of a
 * sandbox's or deployment's recorded spec, never returned by {@code GetSandbox} or {@code ListSandboxes}, and, like
 * every secret of the environment, readable only by callers of that environment. A sandbox deletes the ones it uploaded
 * when it is terminated through its handle; a Chalk Compute server also deletes them by itself once nothing that exists
 * references them (the sandbox ended on its own or was terminated elsewhere, the function version, function or scaling
 * group was deleted), and those no workload used within a few minutes of being saved.
 *
 * <p>Instances are immutable values; their {@code toString} names the secret, never a value.
 */
public sealed interface Secret permits Secret.ChalkEnv, Secret.LocalEnv, Secret.ChalkIntegration, Secret.LocalEnvFile {

    /** Secret names as Chalk accepts them: they become environment variable names. */
    Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    /**
     * A managed secret of the active Chalk environment (create it with {@link SecretsClient#upsert(String, String)}).
     * Its value is read when the workload starts, so a workload started later sees the secret as it is then.
     *
     * @param name the secret's name, such as {@code "OPENAI_API_KEY"}
     * @return the secret
     * @throws IllegalArgumentException when the name is not a valid secret name
     */
    static Secret fromChalkEnv(String name) {
        return new ChalkEnv(name);
    }

    /**
     * A variable of this process's environment, read when the sandbox is created or the deployment deployed.
     * Creating or deploying fails, naming the variable, when it is unset.
     *
     * <p>The value travels as a managed secret of the environment named {@code CHALK_LOCAL_<VARIABLE>_<random>}. A
     * Chalk Compute server deletes it once no sandbox that has not ended, snapshot, function version or scaling group
     * references it any more (so it lasts as long as the deployment, across redeploys while an older version that
     * uses it exists), or when no workload used it within a few minutes of being saved.
     *
     * @param variable the local environment variable's name
     * @return the secret
     * @throws IllegalArgumentException when the name is not a valid variable name
     */
    static Secret fromLocalEnv(String variable) {
        return new LocalEnv(variable);
    }

    /**
     * Values of a Chalk integration: bound to one variable, exactly one key; in bulk, the keys given, or all of them
     * when none are.
     *
     * @param name the integration's name, such as {@code "postgres"}
     * @param keys the keys to select, such as {@code "PASSWORD"}
     * @return the secret
     */
    static Secret fromChalkIntegration(String name, String... keys) {
        return new ChalkIntegration(name, List.of(keys));
    }

    /**
     * Every entry of a local dotenv file ({@code KEY=value} lines; {@code #} comments, blank lines, an
     * {@code export} prefix and single or double quotes are understood), read when the sandbox is created or the
     * deployment deployed. Bulk only: pass it to {@code secrets(...)}. Each entry travels, and is deleted from the
     * server, as a {@link #fromLocalEnv(String)} value does.
     *
     * @param path the file
     * @return the secret
     */
    static Secret fromLocalEnvFile(Path path) {
        return new LocalEnvFile(path);
    }

    /**
     * Whether a function version using this secret may be reused when nothing else changed: only managed Chalk
     * secrets, whose revisions are part of a version's identity, allow it.
     *
     * @return {@code true} for a {@link ChalkEnv} secret
     */
    default boolean allowsVersionReuse() {
        return this instanceof ChalkEnv;
    }

    /**
     * A managed secret of the environment.
     *
     * @param name the secret's name
     */
    record ChalkEnv(String name) implements Secret {
        /** Checks the name. */
        public ChalkEnv {
            checkName("secret name", name);
        }
    }

    /**
     * A variable of the local process environment.
     *
     * @param variable the variable's name
     */
    record LocalEnv(String variable) implements Secret {
        /** Checks the name. */
        public LocalEnv {
            checkName("local environment variable name", variable);
        }
    }

    /**
     * Keys of an integration.
     *
     * @param name the integration's name
     * @param keys the selected keys; empty for all
     */
    record ChalkIntegration(String name, List<String> keys) implements Secret {
        /** Checks the name and keys and copies the list. */
        public ChalkIntegration {
            Objects.requireNonNull(name, "integration name");
            if (name.isBlank()) {
                throw new IllegalArgumentException("an integration name is blank");
            }
            keys = List.copyOf(keys);
            keys.forEach(k -> checkName("key of integration " + name, k));
            if (keys.size() != keys.stream().distinct().count()) {
                throw new IllegalArgumentException("integration " + name + ": a key is listed twice: " + keys);
            }
        }
    }

    /**
     * A local dotenv file.
     *
     * @param path the file
     */
    record LocalEnvFile(Path path) implements Secret {
        /** Checks for null. */
        public LocalEnvFile {
            Objects.requireNonNull(path, "path");
        }
    }

    private static void checkName(String what, String name) {
        Objects.requireNonNull(name, what);
        if (!ENV_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(
                    what + " \"" + name + "\" must be letters, digits and '_', not" + " starting with a digit");
        }
    }
}
