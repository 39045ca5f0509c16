package ai.chalk.compute.server.secret;

import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.store.SecretStore;
import ai.chalk.compute.server.store.SecretStore.IntegrationRecord;
import ai.chalk.compute.server.store.SecretStore.SecretRecord;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The secrets and integrations of each environment: checked names, values sealed with the server's key before they
 * reach the store and opened only for a caller of the same environment or a sandbox starting there. Every method takes
 * the environment; another environment's secret answers as one that does not exist.
 *
 * <p>Nothing here puts a value into a message or a log line: errors name secrets, integrations and keys, never what
 * they hold.
 */
public final class Secrets {

    private static final Logger log = LoggerFactory.getLogger(Secrets.class);
    /** The largest value of a secret or an integration key, in UTF-8 bytes. */
    public static final int MAX_VALUE_BYTES = 64 * 1024;
    /** The longest name of a secret, an integration or an integration key. */
    public static final int MAX_NAME_LENGTH = 255;
    /**
     * The most secrets one environment holds, and apart the most saved for local values ({@link LocalSecretSweep}):
     * every listing, every replica's start and every sandbox given all of them reads them whole, and one tenant saving
     * secrets in a loop made each of those hold gigabytes.
     */
    public static final int MAX_SECRETS = 1000;
    /** The most integrations one environment holds, for the same reason. */
    public static final int MAX_INTEGRATIONS = 256;
    /** The most bytes the values of one environment's secrets hold together, and apart its integrations' values. */
    public static final long MAX_ENVIRONMENT_BYTES = 16L << 20;
    /** The most keys one integration holds. */
    public static final int MAX_INTEGRATION_KEYS = 256;
    /** Environment variable names as Chalk accepts them for secrets: letters, digits, '_', not starting with a digit. */
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private static final Pattern INTEGRATION_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]*");

    /** A secret's metadata (never its value). */
    public record SecretInfo(String id, String name, long revision, Instant updatedAt) {}

    private final SecretStore store;
    private final SecretCipher cipher;
    /**
     * When each secret saved for a local value was last read for a workload starting, by environment and name: such a
     * workload is on its way to being recorded, and {@link LocalSecretSweep} leaves its secrets alone meanwhile.
     */
    private final Map<SecretKey, Instant> localResolved = new ConcurrentHashMap<>();

    private record SecretKey(String environment, String name) {}

    public Secrets(SecretStore store, SecretCipher cipher) {
        this.store = store;
        this.cipher = cipher;
    }

    // ---- secrets

    /** The environment's secrets by name. */
    public List<SecretInfo> list(String environment) {
        return store.secrets(environment).stream().map(Secrets::info).toList();
    }

    /**
     * Sets the environment's secret {@code name} to {@code value}: a new secret, or a new revision of the existing one.
     *
     * @throws ComputeException INVALID_ARGUMENT for a malformed name or a value too large to be an environment variable
     */
    public synchronized SecretInfo upsert(String environment, String name, String value) {
        checkEnvName("name", name);
        checkValue("the value of secret " + name, value);
        byte[] sealed = cipher.encrypt(value, secretData(environment, name));
        boolean local = name.startsWith(LocalSecretSweep.PREFIX);
        checkRoom(
                local
                        ? "secrets saved for local values (" + LocalSecretSweep.PREFIX
                                + "..., which go once nothing uses them)"
                        : "secrets",
                "secrets",
                MAX_SECRETS,
                store.secretUsage(environment, name, LocalSecretSweep.PREFIX, local),
                sealed.length);
        SecretRecord r = store.upsertSecret(
                environment, name, "sec_" + UUID.randomUUID().toString().replace("-", ""), sealed, Instant.now());
        log.info("Secret {} of environment {} saved (revision {})", name, environment, r.revision());
        return info(r);
    }

    /** Deletes the environment's secret {@code name}; NOT_FOUND when it has none. */
    public void delete(String environment, String name) {
        if (!store.deleteSecret(environment, name)) {
            throw notFound(name);
        }
        log.info("Secret {} of environment {} deleted", name, environment);
    }

    /** The environment's secret with this id, or else with this name (the SDK names secrets); NOT_FOUND otherwise. */
    public SecretInfo find(String environment, String idOrName) {
        return info(record(environment, idOrName));
    }

    /** The value of the environment's secret with this id or name; NOT_FOUND as {@link #find}. */
    public String value(String environment, String idOrName) {
        return open(record(environment, idOrName));
    }

    /** Every secret's value by name. */
    public Map<String, String> values(String environment) {
        Map<String, String> out = new LinkedHashMap<>();
        store.secrets(environment).forEach(r -> out.put(r.name(), open(r)));
        return out;
    }

    private SecretRecord record(String environment, String idOrName) {
        if (idOrName.isBlank()) {
            throw ComputeException.invalid("id is required: a secret's id (ListSecrets) or name");
        }
        return store.secret(environment, idOrName)
                .or(() -> store.secretNamed(environment, idOrName))
                .orElseThrow(() -> notFound(idOrName));
    }

    private String open(SecretRecord r) {
        try {
            return cipher.decrypt(r.sealed(), secretData(r.environment(), r.name()));
        } catch (GeneralSecurityException e) {
            log.warn(
                    "Secret {} of environment {} cannot be decrypted with the server's secrets key ({}): the key file"
                            + " was replaced or the stored value altered",
                    r.name(),
                    r.environment(),
                    e.getClass().getSimpleName());
            throw ComputeException.refused("secret " + r.name() + " cannot be decrypted with the server's secrets key"
                    + " (the key was replaced, or the stored value was altered): upsert the secret again");
        }
    }

    private static SecretInfo info(SecretRecord r) {
        return new SecretInfo(r.id(), r.name(), r.revision(), r.updatedAt());
    }

    private static ComputeException notFound(String name) {
        return ComputeException.notFound("secret " + name + " does not exist in this environment");
    }

    /** What a secret's ciphertext is bound to: moved to another environment or name, it no longer opens. */
    private static String secretData(String environment, String name) {
        return "secret\0" + environment + "\0" + name;
    }

    // ---- integrations

    /**
     * Creates the environment's integration {@code name}, or replaces its kind and all its values.
     *
     * @param kind   Chalk's integration kind, as its enum constant's name
     * @param values the integration's keys (environment variable names) and values
     */
    public synchronized IntegrationRecord putIntegration(
            String environment, String name, String kind, Map<String, String> values) {
        checkIntegrationName(name);
        if (values.size() > MAX_INTEGRATION_KEYS) {
            throw ComputeException.invalid(
                    "values has " + values.size() + " keys; an integration holds at most " + MAX_INTEGRATION_KEYS);
        }
        String id = store.integrationNamed(environment, name)
                .map(IntegrationRecord::id)
                .orElse("int_" + UUID.randomUUID().toString().replace("-", ""));
        Map<String, byte[]> sealed = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : new java.util.TreeMap<>(values).entrySet()) {
            checkEnvName("values key", e.getKey());
            checkValue("the value of key " + e.getKey() + " of integration " + name, e.getValue());
            sealed.put(e.getKey(), cipher.encrypt(e.getValue(), integrationData(environment, id, e.getKey())));
        }
        checkRoom(
                "integrations",
                "integrations",
                MAX_INTEGRATIONS,
                store.integrationUsage(environment, name),
                sealed.values().stream().mapToLong(v -> v.length).sum());
        IntegrationRecord r = store.putIntegration(environment, name, kind, id, sealed, Instant.now());
        log.info("Integration {} of environment {} saved ({} keys)", name, environment, sealed.size());
        return r;
    }

    /** Deletes the environment's integration {@code name}; NOT_FOUND when it has none. */
    public void deleteIntegration(String environment, String name) {
        if (!store.deleteIntegration(environment, name)) {
            throw integrationNotFound(name);
        }
        log.info("Integration {} of environment {} deleted", name, environment);
    }

    /** The environment's integrations by name. */
    public List<IntegrationRecord> integrations(String environment) {
        return store.integrations(environment);
    }

    /** The environment's integration with this id, or else this name; NOT_FOUND otherwise. */
    public IntegrationRecord integration(String environment, String idOrName) {
        if (idOrName.isBlank()) {
            throw ComputeException.invalid("integration_id is required: an integration's id or name");
        }
        return store.integration(environment, idOrName)
                .or(() -> store.integrationNamed(environment, idOrName))
                .orElseThrow(() -> integrationNotFound(idOrName));
    }

    /** The keys of an integration (of {@link #integrations}), in order. */
    public List<String> integrationKeys(IntegrationRecord integration) {
        return List.copyOf(store.integrationValues(integration.id()).keySet());
    }

    /** The values of an integration (of {@link #integrations}) by key. */
    public Map<String, String> integrationValues(IntegrationRecord integration) {
        Map<String, String> out = new LinkedHashMap<>();
        store.integrationValues(integration.id()).forEach((k, v) -> out.put(k, openIntegration(integration, k, v)));
        return out;
    }

    /** One value of an integration; NOT_FOUND when it has no such key. */
    public String integrationValue(IntegrationRecord integration, String key) {
        byte[] sealed = store.integrationValues(integration.id()).get(key);
        if (sealed == null) {
            throw ComputeException.notFound("integration " + integration.name() + " has no key " + key);
        }
        return openIntegration(integration, key, sealed);
    }

    private String openIntegration(IntegrationRecord integration, String key, byte[] sealed) {
        try {
            return cipher.decrypt(sealed, integrationData(integration.environment(), integration.id(), key));
        } catch (GeneralSecurityException e) {
            log.warn(
                    "Key {} of integration {} of environment {} cannot be decrypted with the server's secrets key"
                            + " ({})",
                    key,
                    integration.name(),
                    integration.environment(),
                    e.getClass().getSimpleName());
            throw ComputeException.refused("key " + key + " of integration " + integration.name() + " cannot be"
                    + " decrypted with the server's secrets key (the key was replaced, or the stored value was"
                    + " altered): put the integration again");
        }
    }

    private static ComputeException integrationNotFound(String name) {
        return ComputeException.notFound("integration " + name + " does not exist in this environment");
    }

    private static String integrationData(String environment, String integrationId, String key) {
        return "integration\0" + environment + "\0" + integrationId + "\0" + key;
    }

    // ---- resolution

    /**
     * The environment variables that {@code refs} give a sandbox or replica of the environment, read now. A reference
     * to a secret gives one variable, named by its alias or else {@code prefix} + the secret's name; a reference to an
     * integration gives one per selected key ({@code keys}, or all its keys when empty), named likewise.
     *
     * @param field how the references are named in messages, e.g. {@code secret_refs}
     * @throws ComputeException INVALID_ARGUMENT for a malformed reference (naming the field), FAILED_PRECONDITION
     *                          naming a secret, integration or key that does not exist; never with a value
     */
    public Map<String, String> resolve(String environment, List<SecretRef> refs, String field) {
        Map<String, String> env = new LinkedHashMap<>();
        for (int i = 0; i < refs.size(); i++) {
            SecretRef ref = refs.get(i);
            String at = field + "[" + i + "]";
            String prefix = ref.hasPrefix() ? ref.getPrefix() : "";
            if (!prefix.isEmpty() && !ENV_NAME.matcher(prefix).matches()) {
                throw ComputeException.invalid(at + ".prefix \"" + prefix + "\" must be letters, digits and '_',"
                        + " not starting with a digit");
            }
            Map<String, String> values = new LinkedHashMap<>();
            switch (ref.getSourceCase()) {
                case SECRET_NAME -> {
                    if (ref.getKeysCount() > 0) {
                        throw ComputeException.invalid(at + ".keys selects keys of an integration; a reference to"
                                + " secret " + ref.getSecretName() + " has none");
                    }
                    SecretRecord r = store.secretNamed(environment, ref.getSecretName())
                            .orElseThrow(() -> ComputeException.refused(
                                    at + ": secret " + ref.getSecretName() + " does not exist in"
                                            + " this environment; create it (UpsertSecret) or remove the reference"));
                    values.put(r.name(), open(r));
                    if (r.name().startsWith(LocalSecretSweep.PREFIX)) {
                        localResolved.put(new SecretKey(environment, r.name()), Instant.now());
                    }
                }
                case INTEGRATION_NAME -> {
                    IntegrationRecord integration = store.integrationNamed(environment, ref.getIntegrationName())
                            .orElseThrow(() -> ComputeException.refused(at + ": integration " + ref.getIntegrationName()
                                    + " does not exist in this environment"));
                    Map<String, byte[]> sealed = store.integrationValues(integration.id());
                    List<String> keys = ref.getKeysCount() > 0 ? ref.getKeysList() : List.copyOf(sealed.keySet());
                    for (String key : keys) {
                        byte[] s = sealed.get(key);
                        if (s == null) {
                            throw ComputeException.refused(at + ": integration " + integration.name() + " has no"
                                    + " key " + key + " (it has " + String.join(", ", sealed.keySet()) + ")");
                        }
                        values.put(key, openIntegration(integration, key, s));
                    }
                }
                case SOURCE_NOT_SET ->
                    throw ComputeException.invalid(at + " names neither a secret_name nor an" + " integration_name");
            }
            for (String aliased : ref.getAliasesMap().keySet()) {
                if (!values.containsKey(aliased)) {
                    throw ComputeException.invalid(
                            at + ".aliases renames " + aliased + ", which this reference does" + " not select");
                }
            }
            for (Map.Entry<String, String> v : values.entrySet()) {
                String name = ref.getAliasesMap().getOrDefault(v.getKey(), prefix + v.getKey());
                if (!ENV_NAME.matcher(name).matches()) {
                    throw ComputeException.invalid(at + ".aliases gives " + v.getKey() + " the name \"" + name
                            + "\"; environment variable names are letters, digits and '_', not starting with a"
                            + " digit");
                }
                if (env.put(name, v.getValue()) != null) {
                    throw ComputeException.invalid(at + " sets environment variable " + name + ", which an earlier"
                            + " secret reference sets too; give one of them an alias or a prefix");
                }
            }
        }
        return env;
    }

    /** When the environment's secret {@code name} was last read for a workload starting, if it was lately. */
    Optional<Instant> lastResolved(String environment, String name) {
        return Optional.ofNullable(localResolved.get(new SecretKey(environment, name)));
    }

    /** Forgets the reads of {@link #lastResolved} before {@code before}: too old to matter. */
    void forgetResolvedBefore(Instant before) {
        localResolved.values().removeIf(at -> at.isBefore(before));
    }

    // ---- checks

    /**
     * RESOURCE_EXHAUSTED when one more of {@code counted}, holding {@code bytes}, would pass the environment's bounds:
     * {@code most} of them, or its {@code kind}'s values past {@link #MAX_ENVIRONMENT_BYTES}.
     */
    private static void checkRoom(String counted, String kind, int most, SecretStore.Usage others, long bytes) {
        if (others.count() >= most) {
            throw ComputeException.exhausted("this environment has " + others.count() + " " + counted
                    + ", the most it may have; delete some first");
        }
        if (others.bytes() + bytes > MAX_ENVIRONMENT_BYTES) {
            throw ComputeException.exhausted("the values of this environment's " + kind + " would hold "
                    + (others.bytes() + bytes) + " bytes (sealed), past the " + MAX_ENVIRONMENT_BYTES
                    + " one environment may hold; delete some first");
        }
    }

    private static void checkEnvName(String field, String name) {
        if (name.isEmpty()
                || name.length() > MAX_NAME_LENGTH
                || !ENV_NAME.matcher(name).matches()) {
            throw ComputeException.invalid(field + " \"" + name + "\" is not a valid secret name: use 1 to "
                    + MAX_NAME_LENGTH + " letters, digits and '_', not starting with a digit (it becomes an"
                    + " environment variable's name)");
        }
    }

    private static void checkIntegrationName(String name) {
        if (name.isEmpty()
                || name.length() > MAX_NAME_LENGTH
                || !INTEGRATION_NAME.matcher(name).matches()) {
            throw ComputeException.invalid("name \"" + name + "\" is not a valid integration name: use 1 to "
                    + MAX_NAME_LENGTH + " letters, digits, '_', '.' and '-', starting with a letter or digit");
        }
    }

    private static void checkValue(String what, String value) {
        int bytes = value.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_VALUE_BYTES) {
            throw ComputeException.invalid(what + " is " + bytes + " bytes; a secret holds at most " + MAX_VALUE_BYTES
                    + " bytes (64 KiB). Keep larger material in a volume and the secret as its key");
        }
        if (value.indexOf('\0') >= 0) {
            throw ComputeException.invalid(what + " contains a NUL character, which no environment variable can hold");
        }
    }
}
