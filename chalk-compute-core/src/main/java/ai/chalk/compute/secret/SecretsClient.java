package ai.chalk.compute.secret;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.SecretNotFoundException;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.proto.server.v1.DeleteSecretRequest;
import ai.chalk.compute.proto.server.v1.EnvironmentSecretsServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetSecretValueRequest;
import ai.chalk.compute.proto.server.v1.ListSecretsRequest;
import ai.chalk.compute.proto.server.v1.UpsertSecretRequest;
import io.grpc.Channel;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The managed secrets of the caller's environment ({@code EnvironmentSecretsService}): set, list, read and delete
 * them. Obtain one with {@code client.secrets()}.
 * <pre>{@code
 * SecretsClient secrets = client.secrets();
 * secrets.upsert("OPENAI_API_KEY", System.getenv("OPENAI_API_KEY"));
 * for (SecretInfo s : secrets.list()) {
 *     System.out.println(s.name() + " updated " + s.updatedAt());
 * }
 * }</pre>
 * Values are returned only by {@link #get(String)}; this client never logs them nor puts them in an exception.
 * Thread-safe.
 */
public final class SecretsClient {

    private static final Logger log = LoggerFactory.getLogger(SecretsClient.class);
    /** The start of the names under which local secrets are saved. */
    public static final String LOCAL_PREFIX = "CHALK_LOCAL_";

    private static final int MAX_LOCAL_VARIABLE_IN_NAME = 200;

    private final EnvironmentSecretsServiceGrpc.EnvironmentSecretsServiceBlockingStub stub;
    private final Function<String, String> localEnvironment;

    /**
     * A client over a channel; local secrets are read from this process's environment.
     *
     * @param channel the channel to the server
     */
    public SecretsClient(Channel channel) {
        this(channel, System::getenv);
    }

    /**
     * A client over a channel reading local secrets ({@link Secret#fromLocalEnv(String)}) from the given lookup
     * instead of this process's environment.
     *
     * @param channel          the channel to the server
     * @param localEnvironment a variable's value by name, {@code null} when unset
     */
    public SecretsClient(Channel channel, Function<String, String> localEnvironment) {
        this.stub = EnvironmentSecretsServiceGrpc.newBlockingStub(Objects.requireNonNull(channel, "channel"));
        this.localEnvironment = Objects.requireNonNull(localEnvironment, "localEnvironment");
    }

    /**
     * Sets a secret: creates it, or gives it a new value (and a new revision).
     *
     * @param name  its name, letters, digits and '_' not starting with a digit (the variable it gives by default)
     * @param value its value, at most 64 KiB
     * @return the secret as saved
     * @throws ai.chalk.compute.error.InvalidRequestException when the server refuses the name or the value's size
     */
    public SecretInfo upsert(String name, String value) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(value, () -> "value of secret " + name);
        var saved = ServerCall.run(
                        ResourceKind.SECRET,
                        () -> stub.upsertSecret(UpsertSecretRequest.newBuilder()
                                .setName(name)
                                .setValue(value)
                                .build()))
                .getSecretsList();
        log.debug("Secret {} saved", name);
        return saved.stream()
                .filter(s -> s.getName().equals(name))
                .findFirst()
                .map(SecretsClient::info)
                .orElseThrow(() -> new ChalkComputeException(
                        io.grpc.Status.Code.INTERNAL, "the server saved secret " + name + " but does not list it"));
    }

    /**
     * The environment's secrets, by name: names and update times, never values.
     *
     * @return the secrets, sorted by name
     */
    public List<SecretInfo> list() {
        return ServerCall.run(ResourceKind.SECRET, () -> stub.listSecrets(ListSecretsRequest.getDefaultInstance()))
                .getSecretsList()
                .stream()
                .map(SecretsClient::info)
                .sorted(Comparator.comparing(SecretInfo::name))
                .toList();
    }

    /**
     * One secret's metadata.
     *
     * @param name the secret's name
     * @return it, or empty when the environment has none of that name
     */
    public Optional<SecretInfo> find(String name) {
        return list().stream().filter(s -> s.name().equals(name)).findFirst();
    }

    /**
     * A secret's value.
     *
     * @param name the secret's name
     * @return its value
     * @throws SecretNotFoundException when the environment has no secret of that name
     */
    public String get(String name) {
        Objects.requireNonNull(name, "name");
        return ServerCall.run(
                        ResourceKind.SECRET,
                        () -> stub.getSecretValue(
                                GetSecretValueRequest.newBuilder().setId(name).build()))
                .getSecretValue()
                .getValue();
    }

    /**
     * Deletes a secret. Workloads already started keep the value they received; those started later fail, naming it.
     *
     * @param name the secret's name
     * @throws SecretNotFoundException when the environment has no secret of that name
     */
    public void delete(String name) {
        Objects.requireNonNull(name, "name");
        ServerCall.run(
                ResourceKind.SECRET,
                () -> stub.deleteSecret(
                        DeleteSecretRequest.newBuilder().setName(name).build()));
        log.debug("Secret {} deleted", name);
    }

    /**
     * The references a workload's spec carries for {@code bindings}, as the SDK's create and deploy paths send them.
     * Local values ({@link Secret#fromLocalEnv}, {@link Secret#fromLocalEnvFile}) are read now and saved as managed
     * secrets named {@code CHALK_LOCAL_<VARIABLE>_<random>} (see {@link Secret}); if reading or saving one fails, the
     * ones saved so far are deleted again.
     *
     * @param bindings the secrets
     * @return the references and the names of the secrets saved for local values
     * @throws IllegalStateException when a local variable is unset (naming it)
     */
    public References references(SecretBindings bindings) {
        List<SecretRef> refs = new ArrayList<>();
        List<String> uploaded = new ArrayList<>();
        try {
            bindings.env().forEach((name, secret) -> refs.add(bound(name, secret, uploaded)));
            for (Secret secret : bindings.bulk()) {
                if (secret instanceof Secret.ChalkEnv s) {
                    refs.add(SecretRef.newBuilder().setSecretName(s.name()).build());
                } else if (secret instanceof Secret.LocalEnv s) {
                    refs.add(local(s.variable(), localValue(s.variable()), uploaded));
                } else if (secret instanceof Secret.ChalkIntegration s) {
                    refs.add(SecretRef.newBuilder()
                            .setIntegrationName(s.name())
                            .addAllKeys(s.keys())
                            .build());
                } else if (secret instanceof Secret.LocalEnvFile s) {
                    DotEnv.read(s.path()).forEach((key, value) -> refs.add(local(key, value, uploaded)));
                }
            }
        } catch (RuntimeException e) {
            forget(uploaded);
            throw e;
        }
        return new References(refs, uploaded);
    }

    /**
     * The identity of the managed secrets among {@code bindings}: each one's name and update time, so that it
     * changes when one of them is set again. Secrets the environment lacks are left out (the server refuses the
     * workload, naming them); a server without the secrets service gives none.
     *
     * @param bindings the secrets
     * @return {@code NAME@updated-at} entries sorted by name, joined by {@code ,}; empty when there are none
     */
    public String revisions(SecretBindings bindings) {
        List<String> names = bindings.all().stream()
                .filter(s -> s instanceof Secret.ChalkEnv)
                .map(s -> ((Secret.ChalkEnv) s).name())
                .distinct()
                .toList();
        if (names.isEmpty()) {
            return "";
        }
        List<SecretInfo> all;
        try {
            all = list();
        } catch (ChalkComputeException e) {
            if (e.statusCode() != io.grpc.Status.Code.UNIMPLEMENTED) {
                throw e;
            }
            // a server without EnvironmentSecretsService: no revisions to compare, the references alone identify
            log.debug("The server does not list secrets; secret revisions are not part of the version's identity");
            return "";
        }
        Map<String, Instant> updated = new TreeMap<>();
        for (SecretInfo s : all) {
            if (names.contains(s.name())) {
                updated.put(s.name(), s.updatedAt());
            }
        }
        return updated.entrySet().stream()
                .map(e -> e.getKey() + "@" + e.getValue())
                .collect(Collectors.joining(","));
    }

    /**
     * Deletes secrets saved for local values, ignoring those already gone.
     *
     * @param names the secrets' names
     */
    public void forget(List<String> names) {
        for (String name : names) {
            try {
                delete(name);
            } catch (SecretNotFoundException e) {
                log.debug("Secret {} was already deleted", name);
            } catch (ChalkComputeException e) {
                log.warn(
                        "Could not delete secret {}, saved for a local value: {}; delete it with"
                                + " client.secrets().delete(\"{}\")",
                        name,
                        e.getMessage(),
                        name);
            }
        }
    }

    private SecretRef bound(String name, Secret secret, List<String> uploaded) {
        if (secret instanceof Secret.ChalkEnv s) {
            return SecretRef.newBuilder()
                    .setSecretName(s.name())
                    .putAliases(s.name(), name)
                    .build();
        } else if (secret instanceof Secret.LocalEnv s) {
            return local(name, localValue(s.variable()), uploaded);
        } else if (secret instanceof Secret.ChalkIntegration s) {
            return SecretRef.newBuilder()
                    .setIntegrationName(s.name())
                    .addKeys(s.keys().get(0))
                    .putAliases(s.keys().get(0), name)
                    .build();
        }
        throw new IllegalArgumentException(name + ": " + secret + " cannot be bound to one variable");
    }

    /** Saves a local value as a managed secret and references it under {@code variable}. */
    private SecretRef local(String variable, String value, List<String> uploaded) {
        byte[] random = new byte[6];
        new java.security.SecureRandom().nextBytes(random);
        String name = LOCAL_PREFIX
                + (variable.length() > MAX_LOCAL_VARIABLE_IN_NAME
                        ? variable.substring(0, MAX_LOCAL_VARIABLE_IN_NAME)
                        : variable)
                + "_" + HexFormat.of().formatHex(random);
        upsert(name, value);
        uploaded.add(name);
        log.debug("The local value of {} was saved as secret {}", variable, name);
        return SecretRef.newBuilder()
                .setSecretName(name)
                .putAliases(name, variable)
                .build();
    }

    private String localValue(String variable) {
        String value = localEnvironment.apply(variable);
        if (value == null) {
            throw new IllegalStateException("Secret.fromLocalEnv(\"" + variable + "\"): the local environment variable "
                    + variable + " is not set");
        }
        return value;
    }

    private static SecretInfo info(ai.chalk.compute.proto.server.v1.Secret s) {
        return new SecretInfo(
                s.getId(),
                s.getName(),
                Instant.ofEpochSecond(
                        s.getUpdatedAt().getSeconds(), s.getUpdatedAt().getNanos()));
    }

    @Override
    public String toString() {
        return "SecretsClient";
    }

    /**
     * The references for a workload's secrets.
     *
     * @param refs     the references its spec carries
     * @param uploaded the names of the managed secrets saved for its local values
     */
    public record References(List<SecretRef> refs, List<String> uploaded) {
        /** Copies the lists. */
        public References {
            refs = List.copyOf(refs);
            uploaded = List.copyOf(uploaded);
        }
    }
}
