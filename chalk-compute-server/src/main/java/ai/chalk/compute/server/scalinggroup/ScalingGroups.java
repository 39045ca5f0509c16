package ai.chalk.compute.server.scalinggroup;

import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupRevisionResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.secret.LocalSecretSweep;
import ai.chalk.compute.server.store.ScalingGroupStore;
import ai.chalk.compute.server.store.ScalingGroupStore.GroupRecord;
import ai.chalk.compute.server.store.ScalingGroupStore.RevisionRecord;
import ai.chalk.compute.server.worker.PoolStatus;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Timestamp;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Scaling groups and the replicas of their serving revisions: creating a group, adding revisions, routing traffic
 * to one (which starts its replicas and stops the previous ones), deleting, and describing them. A group belongs to
 * an environment: its name is unique there, its replicas run there, and other environments do not see it.
 */
public final class ScalingGroups implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ScalingGroups.class);
    /** A group whose replicas run its container spec. */
    public static final String CONTAINER = "container";
    /** A group whose replicas are function workers. */
    public static final String FUNCTION = "function";

    private final ScalingGroupStore store;
    private final LocalSecretSweep localSecrets;
    private final Map<String, RunnerFactory> factories = new ConcurrentHashMap<>();
    private final Map<String, RevisionRunner> running = new ConcurrentHashMap<>();

    /** @param localSecrets hears that a group was deleted, so the secrets saved for its local values may go */
    public ScalingGroups(ScalingGroupStore store, LocalSecretSweep localSecrets) {
        this.store = store;
        this.localSecrets = localSecrets;
    }

    /** Sets how the replicas of groups of {@code kind} are started. */
    public void register(String kind, RunnerFactory factory) {
        factories.put(kind, factory);
    }

    /**
     * Creates a group of the environment serving its first revision; ALREADY_EXISTS when a live group of the
     * environment has the name.
     */
    public GroupRecord create(String environment, String name, String kind, ScalingGroupSpec spec) {
        return create(environment, name, kind, spec, id("sgr"));
    }

    /**
     * As {@link #create(String, String, String, ScalingGroupSpec)}, with the first revision's id chosen by the caller.
     */
    public synchronized GroupRecord create(
            String environment, String name, String kind, ScalingGroupSpec spec, String revisionId) {
        if (store.liveGroupNamed(environment, name).isPresent()) {
            throw ComputeException.alreadyExists(
                    "scaling group \"" + name + "\" exists; update it" + " (UpdateScalingGroup) or delete it first");
        }
        GroupRecord g =
                store.insertGroup(environment, id("sg"), name, kind, revisionId, spec.toByteArray(), Instant.now());
        startRunner(g);
        return store.group(g.id()).orElseThrow();
    }

    /** Adds a revision with {@code spec} and routes the group's traffic to it. */
    public RevisionRecord addRevision(GroupRecord group, ScalingGroupSpec spec) {
        return addRevision(group, spec, id("sgr"));
    }

    /** As {@link #addRevision(GroupRecord, ScalingGroupSpec)}, with the revision's id chosen by the caller. */
    public synchronized RevisionRecord addRevision(GroupRecord group, ScalingGroupSpec spec, String revisionId) {
        RevisionRecord r = store.insertRevision(revisionId, group.id(), spec.toByteArray(), Instant.now());
        route(group, r.id());
        return r;
    }

    /** Routes a group's traffic to one of its revisions (a rollback when older); its replicas replace the old. */
    public synchronized void route(GroupRecord group, String revisionId) {
        RevisionRecord r = store.revision(revisionId)
                .filter(x -> x.groupId().equals(group.id()))
                .orElseThrow(() -> ComputeException.notFound("scaling group " + group.name() + " has no revision "
                        + revisionId + "; ListScalingGroupRevisions lists them"));
        if (r.id().equals(group.currentRevisionId()) && running.containsKey(group.id())) {
            return;
        }
        store.setCurrent(group.id(), r.id(), Instant.now());
        stopRunner(group.id());
        startRunner(store.group(group.id()).orElseThrow());
    }

    /** Stops a group's replicas and marks it deleted. */
    public synchronized void delete(GroupRecord group) {
        stopRunner(group.id());
        store.delete(group.id(), Instant.now());
        localSecrets.soon();
    }

    private void startRunner(GroupRecord g) {
        RunnerFactory factory = factories.get(g.kind());
        if (factory == null) {
            store.setStatus(g.id(), "failed", Optional.of("no runner for scaling groups of kind " + g.kind()));
            return;
        }
        RevisionRecord rev = store.revision(g.currentRevisionId()).orElseThrow();
        String revisionId = rev.id();
        RevisionRunner runner = factory.start(g, rev, spec(rev), s -> record(g.id(), revisionId, s));
        running.put(g.id(), runner);
    }

    private void stopRunner(String groupId) {
        RevisionRunner old = running.remove(groupId);
        if (old != null) {
            old.close();
        }
    }

    /** Records the status of a revision's replicas as its group's, when that revision serves the group. */
    public void recordRevisionStatus(String revisionId, PoolStatus s) {
        store.revision(revisionId).ifPresent(r -> record(r.groupId(), revisionId, s));
    }

    private void record(String groupId, String revisionId, PoolStatus s) {
        Optional<GroupRecord> g = store.group(groupId);
        if (g.isPresent()
                && g.get().deletedAt().isEmpty()
                && g.get().currentRevisionId().equals(revisionId)
                && (!g.get().status().equals(s.status())
                        || !g.get().statusMessage().equals(s.message()))) {
            store.setStatus(groupId, s.status(), s.message());
        }
    }

    /** Upkeep of every running revision. */
    public void tick(Instant now) {
        running.forEach((id, r) -> {
            try {
                r.tick(now);
            } catch (RuntimeException e) {
                log.warn("Upkeep of scaling group {} failed: {}", id, e.toString());
            }
        });
    }

    /**
     * The environment's live group with this id or name; NOT_FOUND otherwise, another environment's group included
     * (the same answer as for one that does not exist).
     */
    public GroupRecord require(String environment, Optional<String> id, Optional<String> name, boolean includeDeleted) {
        Optional<GroupRecord> g = id.isPresent()
                ? store.group(id.get()).filter(x -> x.environment().equals(environment))
                : name.flatMap(n -> store.liveGroupNamed(environment, n));
        return g.filter(x -> includeDeleted || x.deletedAt().isEmpty())
                .orElseThrow(() -> ComputeException.notFound("no scaling group "
                        + id.map(i -> "with id " + i).orElseGet(() -> "named \"" + name.orElse("") + "\"")
                        + "; ListScalingGroups lists them"));
    }

    public ScalingGroupStore store() {
        return store;
    }

    /** A group as the API describes it, with its live replica counts. */
    public ScalingGroupResponse response(GroupRecord g) {
        GroupRecord fresh = store.group(g.id()).orElse(g);
        ScalingGroupResponse.Builder b = ScalingGroupResponse.newBuilder()
                .setId(fresh.id())
                .setName(fresh.name())
                .setRevisionId(fresh.currentRevisionId())
                .setStatus(fresh.status())
                .setSpec(spec(store.revision(fresh.currentRevisionId()).orElseThrow()))
                .setCreatedAt(ts(fresh.createdAt()))
                .setUpdatedAt(ts(fresh.updatedAt()));
        fresh.statusMessage().ifPresent(b::setStatusMessage);
        fresh.deletedAt().ifPresent(d -> b.setDeletedAt(ts(d)));
        RevisionRunner r = running.get(fresh.id());
        if (r != null) {
            PoolStatus s = r.status();
            b.setReadyReplicas(s.readyReplicas()).setAvailableReplicas(s.availableReplicas());
        }
        return b.build();
    }

    /** A revision as the API describes it. */
    public ScalingGroupRevisionResponse revisionResponse(GroupRecord g, RevisionRecord r) {
        GroupRecord fresh = store.group(g.id()).orElse(g);
        boolean current = fresh.currentRevisionId().equals(r.id());
        ScalingGroupRevisionResponse.Builder b = ScalingGroupRevisionResponse.newBuilder()
                .setId(r.id())
                .setScalingGroupId(fresh.id())
                .setScalingGroupName(fresh.name())
                .setStatus(current ? fresh.status() : "inactive")
                .setSpec(spec(r))
                .setCreatedAt(ts(r.createdAt()))
                .setLatest(store.latestRevision(fresh.id()).id().equals(r.id()));
        if (current) {
            fresh.statusMessage().ifPresent(b::setStatusMessage);
        }
        fresh.deletedAt().ifPresent(d -> b.setDeletedAt(ts(d)));
        return b.build();
    }

    /** A revision's spec. */
    public static ScalingGroupSpec spec(RevisionRecord r) {
        try {
            return ScalingGroupSpec.parseFrom(r.spec());
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalStateException("stored spec of revision " + r.id() + " is unreadable", e);
        }
    }

    static Timestamp ts(Instant i) {
        return Timestamp.newBuilder()
                .setSeconds(i.getEpochSecond())
                .setNanos(i.getNano())
                .build();
    }

    /** A new id with a prefix ({@code sg}, {@code sgr}, ...). */
    public static String id(String prefix) {
        return prefix + "-" + UUID.randomUUID();
    }

    /** Stops every group's replicas (the groups stay; they start again with the server). */
    @Override
    public synchronized void close() {
        running.keySet().forEach(this::stopRunner);
    }

    /** Starts the replicas of every live group (after a restart). */
    public synchronized void recover() {
        for (GroupRecord g : store.liveGroups()) {
            if (!running.containsKey(g.id())) {
                startRunner(g);
            }
        }
    }
}
