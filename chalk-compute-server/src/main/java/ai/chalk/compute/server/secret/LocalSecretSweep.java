package ai.chalk.compute.server.secret;

import ai.chalk.compute.server.store.SecretStore;
import ai.chalk.compute.server.store.SecretStore.SecretRecord;
import ai.chalk.compute.server.store.StoreException;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes the managed secrets the SDK saves for local values ({@code Secret.fromLocalEnv}, {@code fromLocalEnvFile}:
 * secrets named {@code CHALK_LOCAL_<VARIABLE>_<random>}) once nothing that exists references them, so that a value
 * from a user's machine does not outlive its workload on the server. The SDK deletes them itself only when a sandbox
 * it created is terminated through its handle; not when the sandbox ends by itself, is terminated by another client,
 * the client dies between saving and creating, or a function or scaling group is deleted.
 *
 * <p>Such a secret of an environment goes when no workload of that environment that exists names it
 * ({@link SecretReferences#inUse}) and either
 * <ul>
 *   <li>a workload created since the secret was saved named it: its workload came and is gone; or
 *   <li>it was saved more than the grace period ago and no workload starting read it within that period: its workload
 *       never came (the grace covers the moments between the SDK saving it and the workload being recorded).
 * </ul>
 * A secret set again meanwhile (a new revision) stays; other secrets are never touched. Each secret swept is logged at
 * INFO by name. The sweep runs every interval on the server's timer thread, and {@link #soon()} after a workload ends or
 * is deleted.
 */
public final class LocalSecretSweep implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LocalSecretSweep.class);
    /** The start of the names the SDK gives the secrets it saves for local values. */
    public static final String PREFIX = "CHALK_LOCAL_";
    /** How long a secret saved for a local value waits for its workload by default. */
    public static final Duration DEFAULT_GRACE = Duration.ofMinutes(5);
    /** How often the sweep runs by default, besides after workloads end. */
    public static final Duration DEFAULT_INTERVAL = Duration.ofMinutes(1);
    /** How long {@link #soon()} waits, so that the ends of a group's replicas or a function's versions sweep once. */
    static final Duration SOON = Duration.ofMillis(500);

    private final SecretStore store;
    private final Secrets secrets;
    private final SecretReferences references;
    private final ScheduledExecutorService timers;
    private final Duration grace;
    private final AtomicBoolean pending = new AtomicBoolean();
    private volatile boolean closed;
    private ScheduledFuture<?> periodic;

    /**
     * @param secrets    says which secrets workloads starting read lately
     * @param references which secrets the environment's workloads name
     * @param timers     where sweeps run
     * @param grace      how long a secret saved for a local value waits for the workload that names it
     */
    public LocalSecretSweep(
            SecretStore store,
            Secrets secrets,
            SecretReferences references,
            ScheduledExecutorService timers,
            Duration grace) {
        if (grace.isNegative()) {
            throw new IllegalArgumentException("the grace of local secrets must not be negative, got " + grace);
        }
        this.store = store;
        this.secrets = secrets;
        this.references = references;
        this.timers = timers;
        this.grace = grace;
    }

    /** Sweeps every {@code interval} from now on, and once {@link #soon()}. */
    public synchronized void start(Duration interval) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("the local secret sweep interval must be positive, got " + interval);
        }
        if (periodic == null && !closed) {
            periodic = timers.scheduleWithFixedDelay(
                    this::sweepQuietly, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
            soon();
        }
    }

    /**
     * Sweeps shortly: a workload ended or was deleted, so the secrets only it named may go. Cheap; calls close together
     * give one sweep.
     */
    public void soon() {
        if (closed || !pending.compareAndSet(false, true)) {
            return;
        }
        try {
            timers.schedule(
                    () -> {
                        pending.set(false); // an end during this sweep asks for another
                        sweepQuietly();
                    },
                    SOON.toMillis(),
                    TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            pending.set(false); // the server is stopping
        }
    }

    private void sweepQuietly() {
        if (closed) {
            return;
        }
        try {
            sweep();
        } catch (StoreException e) {
            if (e.kind() == StoreException.Kind.FAILED) {
                log.warn("Sweeping the secrets saved for local values failed: {}", e.getMessage());
            } else {
                // the database says itself that it is failing; the next sweep tries again
                log.debug("Sweeping the secrets saved for local values failed: {}", e.getMessage());
            }
        } catch (RuntimeException e) {
            log.warn("Sweeping the secrets saved for local values failed: {}", e.toString());
        }
    }

    /**
     * Deletes, in every environment, the secrets saved for local values that nothing references any more (see the
     * class comment).
     *
     * @return how many were deleted
     */
    public synchronized int sweep() {
        Instant now = Instant.now();
        secrets.forgetResolvedBefore(now.minus(grace));
        Map<String, List<SecretRecord>> byEnvironment = store.secretsNamedWith(PREFIX).stream()
                .collect(Collectors.groupingBy(SecretRecord::environment, TreeMap::new, Collectors.toList()));
        int swept = 0;
        for (Map.Entry<String, List<SecretRecord>> e : byEnvironment.entrySet()) {
            try {
                swept += sweep(e.getKey(), e.getValue(), now);
            } catch (IllegalStateException failed) {
                // a record that cannot be read: keep the environment's secrets rather than guess
                log.warn(
                        "Not sweeping the secrets saved for local values in environment {}: {}",
                        e.getKey(),
                        failed.getMessage());
            }
        }
        return swept;
    }

    private int sweep(String environment, List<SecretRecord> saved, Instant now) {
        Instant oldest = saved.stream()
                .map(SecretRecord::updatedAt)
                .min(Comparator.naturalOrder())
                .orElseThrow();
        // read before what is in use: a workload recorded between the two reads is then in use. The other way round,
        // a sandbox created in between was named but not yet in use, and its secret was deleted as released
        Map<String, Instant> named = references.namedSince(environment, oldest);
        Set<String> inUse = references.inUse(environment);
        List<SecretRecord> unused =
                saved.stream().filter(s -> !inUse.contains(s.name())).toList();
        if (unused.isEmpty()) {
            return 0;
        }
        int swept = 0;
        for (SecretRecord s : unused) {
            Instant lastNamed = named.get(s.name());
            boolean released = lastNamed != null && !lastNamed.isBefore(s.updatedAt());
            // read last: a workload that started with it before this point is on its way to its record
            boolean abandoned =
                    expired(s.updatedAt(), now) && expired(secrets.lastResolved(environment, s.name()), now);
            if ((released || abandoned) && store.deleteSecret(environment, s.name(), s.revision())) {
                log.info(
                        "Secret {} of environment {}, saved by the SDK for a local value, deleted: {}",
                        s.name(),
                        environment,
                        released
                                ? "the workloads that used it have ended or been deleted"
                                : "no workload has used it in the " + grace.toSeconds() + " s since it was saved");
                swept++;
            }
        }
        return swept;
    }

    private boolean expired(Instant at, Instant now) {
        return !at.plus(grace).isAfter(now);
    }

    private boolean expired(Optional<Instant> at, Instant now) {
        return at.map(a -> expired(a, now)).orElse(true);
    }

    /** Stops sweeping. */
    @Override
    public synchronized void close() {
        closed = true;
        if (periodic != null) {
            periodic.cancel(false);
        }
    }
}
