package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.grpc.RequestLimits;
import ai.chalk.compute.server.image.BuildCache;
import ai.chalk.compute.server.image.ImageNames;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxOperationException;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.secret.LocalSecretSweep;
import ai.chalk.compute.server.secret.Secrets;
import ai.chalk.compute.server.store.SandboxRecord;
import ai.chalk.compute.server.store.SandboxState;
import ai.chalk.compute.server.store.SandboxStore;
import ai.chalk.compute.server.store.StoreException;
import ai.chalk.compute.server.threads.EnvironmentShares;
import ai.chalk.compute.server.volume.VolumeManager;
import ai.chalk.compute.server.volume.VolumeUsers;
import com.google.protobuf.util.Durations;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns the lifecycle of every sandbox: records in the store, live handles on the runtime,
 * lifetime enforcement, and recovery after a restart.
 */
public final class SandboxManager implements VolumeUsers, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SandboxManager.class);
    /** Default working directory of a sandbox, as in the SDK's default image. */
    static final String DEFAULT_WORKDIR = "/workspace";

    private final SandboxRuntime runtime;
    private final SandboxStore store;
    private final List<Consumer<String>> endListeners = new CopyOnWriteArrayList<>();
    private final VolumeManager volumes;
    private final BuildCache images;
    private final Secrets secrets;
    private final LocalSecretSweep localSecrets;
    private final SandboxIdentities identities;
    private final ScheduledExecutorService scheduler;
    private final Duration lifetime;
    private final Map<String, LiveSandbox> live = new ConcurrentHashMap<>();
    /**
     * The sandboxes each environment runs: at most half of what the runtime runs, so that a tenant at its share
     * leaves the other half to the others; a function's replicas take theirs here too ({@link #place}), pooled
     * sandboxes count in the runtime's limit only.
     */
    private final EnvironmentShares places;
    /**
     * Sandboxes being terminated, by id, with their environment: a second terminate (the client's, while its lifetime
     * ran out) waits for the first to have ended it, rather than answer while its processes still run.
     */
    private final Map<String, Ending> ending = new ConcurrentHashMap<>();

    private record Ending(String environment, Duration grace, CompletableFuture<Void> ended) {}
    /** Sandboxes that stopped while the store could not write: how they ended, until it is recorded. */
    private final Map<String, Unrecorded> unrecorded = new ConcurrentHashMap<>();

    private record Unrecorded(SandboxState state, String statusMessage, Instant at) {}

    /**
     * @param images       builds the images of sandboxes created from an image spec
     * @param secrets      resolves a spec's secret_refs as its sandbox starts
     * @param localSecrets hears that a sandbox ended, so the secrets saved for its local values may go
     * @param lifetime     the longest a sandbox may run before the server terminates it
     */
    public SandboxManager(
            SandboxRuntime runtime,
            SandboxStore store,
            VolumeManager volumes,
            BuildCache images,
            Secrets secrets,
            LocalSecretSweep localSecrets,
            SandboxIdentities identities,
            ScheduledExecutorService scheduler,
            Duration lifetime) {
        this.runtime = runtime;
        this.store = store;
        this.volumes = volumes;
        this.images = images;
        this.secrets = secrets;
        this.localSecrets = localSecrets;
        this.identities = identities;
        this.scheduler = scheduler;
        this.lifetime = lifetime;
        int max = runtime.maxSandboxes();
        this.places = new EnvironmentShares("sandboxes", max, Math.max(1, max / 2));
    }

    /**
     * A place among {@code environment}'s sandboxes for one the server starts on the runtime itself, a function's
     * replica: it counts with the environment's sandboxes (at most half the server's) and in the server's limit, until
     * it is closed. Without it, a tenant at its share filled the rest of the server with replicas.
     *
     * @throws ComputeException RESOURCE_EXHAUSTED past the environment's share or the server's limit, saying which
     */
    public EnvironmentShares.Place place(String environment) {
        return places.take(environment, SandboxManager::refusal);
    }

    /** The runtime sandboxes run on. */
    public SandboxRuntime runtime() {
        return runtime;
    }

    /**
     * Reconciles the store with the runtime after a start: sandboxes the runtime no longer runs
     * are recorded as terminated, with the reason.
     */
    public void recover() {
        List<String> running = new ArrayList<>();
        Map<String, String> environments = new HashMap<>();
        Map<String, List<String>> volumes = new HashMap<>();
        for (SandboxState s : List.of(SandboxState.PENDING, SandboxState.RUNNING, SandboxState.SUSPENDED)) {
            long after = 0;
            while (true) {
                List<SandboxRecord> page = store.list(Optional.empty(), after, 500, List.of(s), List.of());
                if (page.isEmpty()) {
                    break;
                }
                page.forEach(r -> {
                    running.add(r.id());
                    environments.put(r.id(), r.environment());
                    volumes.put(
                            r.id(),
                            ContainerSpecs.of(r).getVolumesList().stream()
                                    .map(v -> v.getName())
                                    .toList());
                });
                after = page.get(page.size() - 1).seq();
            }
        }
        var adopted = runtime.reconcile(running);
        for (RuntimeSandbox sandbox : adopted) {
            String environment = environments.get(sandbox.id());
            // admitted under the same limits before the restart: held whatever the shares say now; its volumes stay
            // in use (deleting one while it is mounted is refused, as before the restart)
            track(
                    new LiveSandbox(
                            sandbox.id(),
                            environment,
                            sandbox,
                            volumes.getOrDefault(sandbox.id(), List.of()),
                            places.hold(environment)),
                    Duration.ZERO);
        }
        var adoptedIds = adopted.stream().map(RuntimeSandbox::id).toList();
        int lost = 0;
        for (String id : running) {
            if (!adoptedIds.contains(id)) {
                store.updateState(
                        id,
                        SandboxState.TERMINATED,
                        "the server restarted at " + Instant.now()
                                + " and the " + runtime.name() + " runtime no longer runs this sandbox: its processes"
                                + " ended with the previous server process");
                lost++;
            }
        }
        if (lost > 0) {
            localSecrets.soon();
        }
        if (lost > 0 || !adopted.isEmpty()) {
            log.info(
                    "Recovered sandbox state: {} adopted, {} recorded as terminated by the restart",
                    adopted.size(),
                    lost);
        }
    }

    /** What the runtime calls the images an environment names ({@link ImageNames}). */
    public ImageNames imageNames() {
        return images.names();
    }

    /**
     * Creates and starts a sandbox in an environment; returns its record once it can run processes. The record is
     * written once the runtime has started it (one database write on the path to the first exec);
     * a sandbox that fails to start is recorded as FAILED with the reason.
     *
     * @param environment the environment it belongs to: its volumes are that environment's, and only callers acting
     *                    in it see it
     */
    public SandboxRecord create(String environment, CreateSandboxRequest request) {
        ContainerSpecs.checkSize(ContainerSpecs.fromV1(request), "the sandbox's spec"); // before a build
        SandboxSpec spec = specFor(environment, request, Optional.empty(), FieldNames.V1, Map.of());
        Optional<String> buildId = Optional.empty();
        if (request.getImageSourceCase() == CreateSandboxRequest.ImageSourceCase.IMAGE_SPEC) {
            // the rest of the request is valid: now build (or find) the image, within the call's deadline
            BuildCache.BuiltImage built = images.imageFor(environment, request.getImageSpec());
            spec = spec.withImage(built.imageRef());
            // recorded with the image it runs; the build (found by build_id) keeps the spec
            request = request.toBuilder().setImage(built.imageRef()).build();
            buildId = Optional.of(built.buildId());
        }
        return launch(environment, request, spec, ContainerSpecs.fromV1(request), lifetime, buildId);
    }

    /**
     * Creates and starts a sandbox described by a v2 spec, as {@link #create(String, CreateSandboxRequest)}: the fields
     * this runtime cannot honour are refused (FAILED_PRECONDITION naming them), the rest go through the same
     * validation as v1's. Its {@code network_policy} is enforced by the egress proxy ({@link NetworkPolicies}: none
     * for no network, {@code allowed_routes ["0.0.0.0/0"]} alone for the whole one). Its {@code secret_refs} are
     * resolved now, in the environment, into environment variables of
     * the sandbox's processes: the record keeps the references (the spec as given), never the values, so a restore
     * from a snapshot or a replica started later reads the secrets as they are then.
     *
     * @param initialFilesystem a directory (a snapshot's files) copied into the sandbox's writable layer; empty
     *                          for a fresh one
     */
    public SandboxRecord create(String environment, ChalkContainerSpec spec, Optional<Path> initialFilesystem) {
        ContainerSpecs.refuseUnsupported(spec, runtime.name());
        ContainerSpecs.checkSize(spec, "the sandbox's spec");
        Duration sandboxLifetime = lifetimeOf(spec);
        CreateSandboxRequest request = ContainerSpecs.toV1(spec);
        Map<String, String> secretEnv = secrets.resolve(environment, spec.getSecretRefsList(), "secret_refs");
        SandboxSpec runtimeSpec = specFor(environment, request, initialFilesystem, FieldNames.V2, secretEnv);
        if (spec.hasNetworkPolicy()) {
            runtimeSpec = NetworkPolicies.grant(spec.getNetworkPolicy(), "network_policy", secrets, environment)
                    .applyTo(runtimeSpec);
        }
        if (spec.hasChalkWorkloadIdentity()) {
            SandboxIdentities.Grant grant = identities.grant(runtimeSpec.id(), environment);
            runtimeSpec = runtimeSpec.with(grant.env(), grant.bindings());
        }
        return launch(environment, request, runtimeSpec, spec, sandboxLifetime, Optional.empty());
    }

    private static String refusal(EnvironmentShares.Refusal refusal, EnvironmentShares places, String environment) {
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? "this environment runs " + places.held(environment) + " sandboxes at once, the most one environment"
                        + " may (half of the " + places.limit() + " the server runs): terminate one first"
                : "the server runs " + places.held() + " sandboxes at once, its limit: terminate one first, or try"
                        + " again later";
    }

    private Duration lifetimeOf(ChalkContainerSpec spec) {
        if (!spec.hasLifetime()) {
            return lifetime;
        }
        Duration asked;
        try {
            asked = Duration.ofNanos(Durations.toNanos(Durations.checkValid(spec.getLifetime())));
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw ComputeException.invalid("lifetime is not a valid duration: " + e.getMessage());
        }
        if (asked.isNegative() || asked.isZero()) {
            throw ComputeException.invalid("lifetime must be positive, got " + Durations.toString(spec.getLifetime()));
        }
        if (asked.compareTo(lifetime) > 0) {
            throw ComputeException.invalid("lifetime " + Durations.toString(spec.getLifetime())
                    + " is longer than this server lets a sandbox run ("
                    + Durations.toString(Durations.fromNanos(lifetime.toNanos()))
                    + ", the server's --sandbox-lifetime setting);"
                    + " ask for less, or leave it unset for the maximum");
        }
        return asked;
    }

    private SandboxRecord launch(
            String environment,
            CreateSandboxRequest request,
            SandboxSpec spec,
            ChalkContainerSpec containerSpec,
            Duration sandboxLifetime,
            Optional<String> buildId) {
        Optional<String> name =
                request.hasName() && !request.getName().isBlank() ? Optional.of(request.getName()) : Optional.empty();
        EnvironmentShares.Place place;
        try {
            if (name.isPresent() && name.get().length() > 255) {
                throw ComputeException.invalid(
                        "name is " + name.get().length() + " characters; at most 255 are allowed");
            }
            place = places.take(environment, SandboxManager::refusal);
        } catch (ComputeException e) {
            identities.release(spec.id()); // granted for a sandbox that will not start
            throw e;
        }
        Instant createdAt = Instant.now();
        byte[] specBytes = containerSpec.toByteArray();
        RuntimeSandbox started;
        try {
            // the runtime bounds the sandbox's life too where it can, so a server that dies leaves nothing forever
            started = sandboxLifetime.isZero() || sandboxLifetime.isNegative()
                    ? runtime.start(spec)
                    : runtime.start(spec, sandboxLifetime);
        } catch (RuntimeStartException e) {
            place.close();
            identities.release(spec.id());
            store.insert(
                    environment,
                    spec.id(),
                    name,
                    SandboxState.FAILED,
                    spec.image(),
                    runtime.name(),
                    createdAt,
                    specBytes,
                    e.getMessage(),
                    buildId);
            throw ComputeException.refused("sandbox could not start: " + e.getMessage());
        } catch (RuntimeException e) {
            place.close();
            identities.release(spec.id());
            store.insert(
                    environment,
                    spec.id(),
                    name,
                    SandboxState.FAILED,
                    spec.image(),
                    runtime.name(),
                    createdAt,
                    specBytes,
                    "sandbox could not start: " + e,
                    buildId);
            throw e;
        }
        SandboxRecord record;
        try {
            record = store.insert(
                    environment,
                    spec.id(),
                    name,
                    SandboxState.RUNNING,
                    spec.image(),
                    runtime.name(),
                    createdAt,
                    specBytes,
                    null,
                    buildId);
        } catch (RuntimeException e) {
            try {
                started.terminate(Duration.ZERO); // a sandbox nobody could ever find again must not keep running
            } finally {
                place.close();
                identities.release(spec.id());
            }
            throw e;
        }
        track(
                new LiveSandbox(
                        spec.id(),
                        environment,
                        started,
                        request.getVolumesList().stream().map(v -> v.getName()).toList(),
                        place),
                sandboxLifetime);
        log.info(
                "Sandbox {} running on the {} runtime{}",
                spec.id(),
                runtime.name(),
                spec.initialFilesystem().isPresent() ? " from a snapshot" : "");
        return record;
    }

    private void track(LiveSandbox sandbox, Duration lifetime) {
        live.put(sandbox.id(), sandbox);
        if (!lifetime.isZero() && !lifetime.isNegative()) {
            sandbox.lifetimeTimer(scheduler.schedule(
                    () -> expire(sandbox.id(), lifetime), lifetime.toMillis(), TimeUnit.MILLISECONDS));
        }
        sandbox.runtime().onStopped().thenAccept(reason -> {
            // a sandbox that stopped by itself (its init died) is over; terminate() records its own reason
            if (live.remove(sandbox.id()) != null) {
                sandbox.cancelLifetimeTimer();
                sandbox.ended();
                sandbox.place().close(); // before the end is seen: a create made on seeing it finds the place free
                synchronized (sandbox) {
                    recordEnd(sandbox.id(), reason);
                }
                log.info("Sandbox {} stopped: {}", sandbox.id(), reason);
            }
        });
    }

    private void expire(String id, Duration lifetime) {
        try {
            end(id, Duration.ofSeconds(5), "its lifetime of " + lifetime + " ran out");
        } catch (RuntimeException e) {
            log.warn("Terminating sandbox {} at the end of its lifetime failed: {}", id, e.toString());
        }
    }

    /** How errors name the fields validated in both APIs: v1's CreateSandboxRequest or v2's ChalkContainerSpec. */
    private record FieldNames(String image, String env, String cpu, String memory) {
        static final FieldNames V1 = new FieldNames("image", "env", "resource_limits.cpu", "resource_limits.memory");
        static final FieldNames V2 = new FieldNames("image", "env_vars", "resources.cpu", "resources.memory");
    }

    /**
     * The runtime's spec of a request; its image as the runtime calls it ({@link ImageNames}: the environment's own
     * tag of that name, never another environment's build).
     *
     * @param secretEnv the variables the request's secret references resolved to, set beside its own env
     */
    private SandboxSpec specFor(
            String environment,
            CreateSandboxRequest request,
            Optional<Path> initialFilesystem,
            FieldNames fields,
            Map<String, String> secretEnv) {
        RequestLimits.checkEnv(fields.env(), request.getEnvMap());
        Map<String, String> env = request.getEnvMap();
        if (!secretEnv.isEmpty()) {
            env = new java.util.LinkedHashMap<>(request.getEnvMap());
            for (Map.Entry<String, String> e : secretEnv.entrySet()) {
                if (env.putIfAbsent(e.getKey(), e.getValue()) != null) {
                    throw ComputeException.invalid(fields.env() + " sets " + e.getKey() + ", which secret_refs sets"
                            + " too; remove it from one of them (or give the secret an alias)");
                }
            }
            // the messages name variables and sizes only, never values
            RequestLimits.checkEnv(fields.env() + " with secret_refs", env);
        }
        String image = switch (request.getImageSourceCase()) {
            case IMAGE ->
                images.names().forRuntime(environment, request.getImage().trim(), fields.image());
            case IMAGE_SPEC -> ""; // built by create() once the rest of the request has been found valid
            case IMAGESOURCE_NOT_SET -> "";
        };
        SandboxSpec.ResourceLimits limits = SandboxSpec.ResourceLimits.NONE;
        if (request.hasResourceLimits()) {
            var rl = request.getResourceLimits();
            limits = ResourceQuantity.limits(
                    fields.cpu(), rl.hasCpu(), rl.getCpu(), fields.memory(), rl.hasMemory(), rl.getMemory());
        }
        Caller caller = Caller.KEY.get();
        List<SandboxSpec.VolumeBinding> mounts = VolumeMounts.resolve(
                environment,
                request.getVolumesList(),
                volumes,
                caller != null && caller.kind() == Caller.Kind.WORKLOAD);
        boolean network = false;
        // v2's policy is read by create() (NetworkPolicies); v1 keeps its meaning: none, or the whole network
        if (request.hasNetworkPolicy() && fields == FieldNames.V1) {
            var policy = request.getNetworkPolicy();
            boolean grantsAll = policy.getAllowedRoutesList().stream()
                            .anyMatch(r -> r.getRoute().equals("0.0.0.0/0") && r.getPortRangesCount() == 0)
                    && policy.getDeniedRoutesCount() == 0
                    && policy.getAllowedHostsCount() == 0;
            boolean grantsNone = policy.getAllowedRoutesCount() == 0 && policy.getAllowedHostsCount() == 0;
            if (!grantsAll && !grantsNone) {
                throw ComputeException.refused("network_policy: a v1 CreateSandbox gives a sandbox either no network"
                        + " or the host's whole network (allowed_routes [\"0.0.0.0/0\"]); per-route and per-host rules"
                        + " are enforced for sandboxes created through chalk.sandbox.v2 (ChalkContainerSpec),"
                        + " so they are refused here rather than ignored");
            }
            network = grantsAll;
        }
        return new SandboxSpec(
                UUID.randomUUID().toString(),
                image,
                env,
                DEFAULT_WORKDIR,
                limits,
                network,
                request.getEntrypointList(),
                mounts,
                initialFilesystem);
    }

    /**
     * The record of one of the environment's sandboxes, or NOT_FOUND: another environment's sandbox answers as one
     * that does not exist, with the same message, so that its existence is not revealed.
     */
    public SandboxRecord get(String environment, String id) {
        requireId(id);
        return store.find(id)
                .filter(r -> r.environment().equals(environment))
                .map(this::current)
                .orElseThrow(() -> notFound(id));
    }

    private static RuntimeException notFound(String id) {
        return ComputeException.notFound("sandbox " + id + " does not exist on this server");
    }

    /** A page of the environment's records. */
    public List<SandboxRecord> list(
            String environment, long afterSeq, int limit, List<SandboxState> states, List<SandboxState> notStates) {
        return store.list(Optional.of(environment), afterSeq, limit, states, notStates).stream()
                .map(this::current)
                .toList();
    }

    /** A page of records matching a v2 query (which names the environment). */
    public List<SandboxRecord> search(SandboxStore.Query query) {
        return store.search(query).stream().map(this::current).toList();
    }

    /** The record as it stands, with an end the store could not record yet. */
    private SandboxRecord current(SandboxRecord r) {
        Unrecorded end = unrecorded.get(r.id());
        if (end == null) {
            return r;
        }
        return new SandboxRecord(
                r.seq(),
                r.id(),
                r.name(),
                end.state(),
                r.image(),
                r.runtime(),
                r.createdAt(),
                Optional.of(end.at()),
                Optional.of(end.statusMessage()),
                r.request(),
                r.containerSpec(),
                r.buildId(),
                r.environment());
    }

    /** Calls {@code listener} with the id of each sandbox that ends from now on (terminated, or its lifetime over). */
    public void whenEnded(Consumer<String> listener) {
        endListeners.add(listener);
    }

    /**
     * Records that a sandbox terminated. The sandbox is gone whether or not the store can write, so a store that
     * fails (a full disk) must not fail the terminate: the end is kept in memory, shown by {@link #get} and
     * {@link #list}, and written by {@link #recordPendingEnds()} once the store works again (a restart meanwhile
     * records it as terminated by the restart).
     */
    private void recordEnd(String id, String statusMessage) {
        identities.release(id);
        for (Consumer<String> listener : endListeners) {
            listener.accept(id);
        }
        try {
            store.updateState(id, SandboxState.TERMINATED, statusMessage);
            unrecorded.remove(id);
            localSecrets.soon();
        } catch (StoreException e) {
            unrecorded.put(id, new Unrecorded(SandboxState.TERMINATED, statusMessage, Instant.now()));
            log.warn(
                    "Sandbox {} terminated, but the store could not record it ({}); it is recorded once the store"
                            + " writes again",
                    id,
                    e.getMessage());
        }
    }

    /** Writes the ends of sandboxes that stopped while the store could not write; stops at the first failure. */
    public void recordPendingEnds() {
        for (Map.Entry<String, Unrecorded> e : List.copyOf(unrecorded.entrySet())) {
            try {
                store.updateState(e.getKey(), e.getValue().state(), e.getValue().statusMessage());
                unrecorded.remove(e.getKey(), e.getValue());
                localSecrets.soon();
            } catch (StoreException failed) {
                return;
            }
        }
    }

    /**
     * The running sandbox with this id, to start processes in: NOT_FOUND when unknown, FAILED_PRECONDITION when it
     * is suspended (saying so) or no longer running.
     */
    public LiveSandbox requireRunning(String environment, String id) {
        LiveSandbox sandbox = requireLive(environment, id);
        if (sandbox.suspended()) {
            throw ComputeException.refused("sandbox " + id + " is suspended: its processes are"
                    + " frozen and it starts no new ones; resume it (ResumeSandbox) first");
        }
        return sandbox;
    }

    /**
     * The sandbox with this id while it lives, running or suspended: NOT_FOUND when unknown, FAILED_PRECONDITION
     * when it has stopped.
     */
    public LiveSandbox requireLive(String environment, String id) {
        requireId(id);
        LiveSandbox sandbox = live.get(id);
        if (sandbox != null) {
            if (!sandbox.environment().equals(environment)) {
                throw notFound(id);
            }
            return sandbox;
        }
        SandboxRecord record = get(environment, id);
        throw ComputeException.refused("sandbox " + id + " is " + record.state()
                + record.statusMessage().map(m -> " (" + m + ")").orElse("")
                + "; it cannot run processes any more: create a new sandbox");
    }

    /**
     * Suspends a sandbox: its processes are frozen where they stand until {@link #resume}; it starts no new
     * ones meanwhile, and its lifetime keeps counting. Suspending a suspended sandbox does nothing.
     * FAILED_PRECONDITION when the runtime cannot suspend (it says why) or the sandbox has stopped.
     */
    public void suspend(String environment, String id) {
        LiveSandbox sandbox = requireLive(environment, id);
        synchronized (sandbox) { // one suspend or resume at a time; the final state update of a terminate waits
            if (live.get(id) != sandbox) {
                requireLive(environment, id); // terminated meanwhile: says so
            }
            if (sandbox.suspended()) {
                return;
            }
            try {
                sandbox.runtime().suspend();
            } catch (SandboxOperationException e) {
                throw ComputeException.refused(e.getMessage());
            }
            sandbox.suspended(true);
            store.updateState(
                    id,
                    SandboxState.SUSPENDED,
                    "suspended at " + Instant.now() + "; ResumeSandbox lets its processes continue");
        }
        log.info("Sandbox {} suspended", id);
    }

    /** Resumes a suspended sandbox; resuming a running one does nothing. FAILED_PRECONDITION as {@link #suspend}. */
    public void resume(String environment, String id) {
        LiveSandbox sandbox = requireLive(environment, id);
        synchronized (sandbox) {
            if (live.get(id) != sandbox) {
                requireLive(environment, id);
            }
            if (!sandbox.suspended()) {
                return;
            }
            try {
                sandbox.runtime().resume();
            } catch (SandboxOperationException e) {
                throw ComputeException.refused(e.getMessage());
            }
            sandbox.suspended(false);
            store.updateState(id, SandboxState.RUNNING, "resumed at " + Instant.now());
        }
        log.info("Sandbox {} resumed", id);
    }

    /**
     * Terminates a sandbox: SIGTERM to its processes, SIGKILL after the grace period, then its
     * writable layer is discarded. A suspended sandbox is resumed first, so its processes can react.
     * Terminating a finished sandbox does nothing; another environment's sandbox is NOT_FOUND, as in {@link #get}.
     */
    public void terminate(String environment, String id, Duration grace, String reason) {
        requireId(id);
        LiveSandbox running;
        Ending underWay;
        synchronized (ending) {
            running = live.get(id);
            underWay = ending.get(id);
        }
        if (running != null && running.environment().equals(environment)) {
            underWay = end(id, grace, reason);
        } else if (underWay == null || !underWay.environment().equals(environment)) {
            // NOT_FOUND when it never existed in this environment (another's live sandbox included)
            log.debug("Sandbox {} already {}", id, get(environment, id).state());
            return;
        }
        if (underWay != null) {
            awaitEnd(id, underWay, grace);
        }
    }

    /**
     * Waits for another caller's end of a sandbox: the longer of the two grace periods, and a minute more for the
     * runtime's part, at most; past that, UNAVAILABLE saying so (a waiter never holds its thread for a runtime that
     * hangs).
     */
    private static void awaitEnd(String id, Ending underWay, Duration grace) {
        Duration limit = (grace.compareTo(underWay.grace()) > 0 ? grace : underWay.grace()).plusMinutes(1);
        try {
            underWay.ended().get(limit.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw ComputeException.unavailable("sandbox " + id + " is being terminated by another call, which has not"
                    + " finished within " + limit.toSeconds() + " s: ask again to see it end");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ComputeException.unavailable("the server is stopping while sandbox " + id + " is terminated");
        } catch (ExecutionException e) {
            throw new IllegalStateException("an end is completed normally, never exceptionally", e);
        }
    }

    /**
     * Terminates a sandbox whatever its environment (its lifetime ran out, the server stops).
     *
     * @return how another caller's end of it goes, when another caller is ending it; null when this call ended it or it
     *     had ended
     */
    private @Nullable Ending end(String id, Duration grace, String reason) {
        LiveSandbox sandbox;
        Ending underWay;
        // noted as ending as it stops being live, so that a terminate finds it in one or the other
        synchronized (ending) {
            sandbox = live.remove(id);
            underWay = sandbox == null
                    ? ending.get(id)
                    : new Ending(sandbox.environment(), grace, new CompletableFuture<>());
            if (sandbox != null) {
                ending.put(id, underWay);
            }
        }
        if (sandbox == null) {
            return underWay;
        }
        try {
            sandbox.cancelLifetimeTimer();
            sandbox.ended();
            try {
                sandbox.runtime().terminate(grace);
            } finally {
                sandbox.place().close(); // before the end is recorded and answered: the next create finds it free
                synchronized (sandbox) {
                    recordEnd(id, "terminated: " + reason);
                }
            }
        } finally {
            ending.remove(id);
            underWay.ended().complete(null);
        }
        log.info("Sandbox {} terminated: {}", id, reason);
        return null;
    }

    /** Ids of the running sandboxes that mount the environment's volume {@code name}. */
    @Override
    public List<String> sandboxesMounting(String environment, String name) {
        return live.values().stream()
                .filter(s -> s.environment().equals(environment) && s.volumes().contains(name))
                .map(LiveSandbox::id)
                .sorted()
                .toList();
    }

    /** Counts of sandboxes by state, for health. */
    public Map<SandboxState, Long> counts() {
        Map<SandboxState, Long> counts = new java.util.EnumMap<>(SandboxState.class);
        for (SandboxState s : SandboxState.values()) {
            counts.put(s, store.count(s));
        }
        return counts;
    }

    /**
     * How many of an environment's sandboxes are in each state, every state listed.
     *
     * @param environment the environment
     * @return the counts, in state order
     */
    public Map<SandboxState, Long> counts(String environment) {
        Map<SandboxState, Long> counts = new java.util.EnumMap<>(SandboxState.class);
        for (SandboxState s : SandboxState.values()) {
            counts.put(s, store.count(environment, s));
        }
        return counts;
    }

    private static void requireId(String id) {
        if (id == null || id.isBlank()) {
            throw ComputeException.invalid("sandbox_id is required");
        }
    }

    /** Terminates every running sandbox (server shutdown). */
    @Override
    public void close() {
        for (String id : List.copyOf(live.keySet())) {
            try {
                end(id, Duration.ofSeconds(2), "the server shut down");
            } catch (RuntimeException e) {
                log.warn("Terminating sandbox {} at shutdown failed: {}", id, e.toString());
            }
        }
    }
}
