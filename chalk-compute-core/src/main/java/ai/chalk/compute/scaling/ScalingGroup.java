package ai.chalk.compute.scaling;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.network.Credential;
import ai.chalk.compute.network.NetworkPolicy;
import ai.chalk.compute.network.NetworkSpecs;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.ChalkWorkloadIdentity;
import ai.chalk.compute.proto.scalinggroup.v1.CreateScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.DeleteScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupRevisionsRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupRevisionsResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupTraffic;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupTrafficTarget;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.proto.scalinggroup.v1.UpdateScalingGroupRequest;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.secret.Secret;
import ai.chalk.compute.secret.SecretBindings;
import ai.chalk.compute.secret.SecretsClient;
import io.grpc.Channel;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A scaling group: a named, replicated service with a stable id and immutable revisions beneath it. Each
 * {@link #deploy()} appends a revision; {@link #rollback(String)} serves an earlier one again.
 * <pre>{@code
 * ScalingGroup api = ScalingGroup.create(client, "api", "registry.example/api:v1").replicas(1, 3).deploy();
 * api.deploy();                                   // another revision
 * for (ScalingGroupRevision r : api.revisions()) {
 *     System.out.println(r.id() + " " + r.status() + " " + r.current());
 * }
 * api.rollback(previousRevisionId);
 * }</pre>
 * Readiness is logged (at INFO, logger {@code ai.chalk.compute.scaling}) only when its state, replica counts or
 * message change. Not thread-safe: use one handle per thread, or synchronise.
 */
public final class ScalingGroup {

    private static final Logger log = LoggerFactory.getLogger(ScalingGroup.class);

    private final ScalingGroupManagerServiceGrpc.ScalingGroupManagerServiceBlockingStub stub;
    private final String name;
    private ScalingGroupSpec spec;
    private String id;
    private Readiness readiness;
    private SecretsClient secrets;
    private ProgressDisplay progress = ProgressDisplay.fromEnv();
    private SecretBindings secretBindings; // null: keep the spec's secret_refs
    private NetworkPolicy network; // null with no credentials: keep the spec's network_policy
    private final List<Credential> credentials = new ArrayList<>();

    private ScalingGroup(Channel channel, String name, ScalingGroupSpec spec, String id) {
        this.stub = ScalingGroupManagerServiceGrpc.newBlockingStub(Objects.requireNonNull(channel, "channel"));
        this.name = Objects.requireNonNull(name, "name");
        this.spec = spec;
        this.id = id;
    }

    /**
     * A scaling group to deploy: one replica of the image until {@link #replicas(int, int)} says otherwise. Nothing is
     * sent until {@link #deploy()}.
     *
     * @param client the client
     * @param name   the group's name
     * @param image  the image reference its replicas run
     * @return the group, not yet deployed
     */
    public static ScalingGroup create(SandboxClient client, String name, String image) {
        ScalingGroup group = create(client.channel(), name, image);
        group.secrets = client.secrets();
        group.progress = client.progress();
        return group;
    }

    /**
     * A scaling group to deploy, over a channel.
     *
     * @param channel the channel to the server
     * @param name    the group's name
     * @param image   the image reference its replicas run
     * @return the group, not yet deployed
     */
    public static ScalingGroup create(Channel channel, String name, String image) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("a scaling group needs a name");
        }
        ScalingGroupSpec spec = ScalingGroupSpec.newBuilder()
                .setContainerSpec(
                        ChalkContainerSpec.newBuilder().setName(name).setImage(Objects.requireNonNull(image, "image")))
                .setScalingSpec(ScalingSpec.newBuilder().setMinReplicas(1).setMaxReplicas(1))
                .build();
        return new ScalingGroup(channel, name, spec, null);
    }

    /**
     * Attaches to a deployed group by its stable id.
     *
     * @param client the client
     * @param id     the group's id
     * @return the group, as the server describes it now
     * @throws ai.chalk.compute.error.ScalingGroupNotFoundException when the id is unknown
     */
    public static ScalingGroup fromId(SandboxClient client, String id) {
        ScalingGroup group = fromId(client.channel(), id);
        group.progress = client.progress();
        return group;
    }

    /**
     * Attaches to a deployed group by its stable id, over a channel.
     *
     * @param channel the channel to the server
     * @param id      the group's id
     * @return the group, as the server describes it now
     * @throws ai.chalk.compute.error.ScalingGroupNotFoundException when the id is unknown
     */
    public static ScalingGroup fromId(Channel channel, String id) {
        var stub = ScalingGroupManagerServiceGrpc.newBlockingStub(channel);
        ScalingGroupResponse group = ServerCall.run(
                        ResourceKind.SCALING_GROUP,
                        () -> stub.getScalingGroup(
                                GetScalingGroupRequest.newBuilder().setId(id).build()))
                .getScalingGroup();
        ScalingGroup handle = new ScalingGroup(channel, group.getName(), group.getSpec(), group.getId());
        handle.observe(group);
        return handle;
    }

    /**
     * Sets the replica range the next {@link #deploy()} asks for.
     *
     * @param min the fewest replicas kept running
     * @param max the most replicas started under load
     * @return this group
     */
    public ScalingGroup replicas(int min, int max) {
        if (min < 0 || max < Math.max(1, min)) {
            throw new IllegalArgumentException("replicas: need 0 <= min <= max and max >= 1, got " + min + ".." + max);
        }
        spec = spec.toBuilder()
                .setScalingSpec(
                        spec.getScalingSpec().toBuilder().setMinReplicas(min).setMaxReplicas(max))
                .build();
        return this;
    }

    /**
     * Sets the environment variables the next {@link #deploy()} gives its replicas.
     *
     * @param env the variables
     * @return this group
     */
    public ScalingGroup env(Map<String, String> env) {
        spec = spec.toBuilder()
                .setContainerSpec(
                        spec.getContainerSpec().toBuilder().clearEnvVars().putAllEnvVars(env))
                .build();
        return this;
    }

    /**
     * Gives the replicas of the next {@link #deploy()} an environment variable whose value is a secret, read as each
     * replica starts (a local secret is read at deploy and saved as a managed secret; see {@link Secret}).
     *
     * @param name   the variable's name
     * @param secret a Chalk secret, a local variable or one key of an integration
     * @return this group
     */
    public ScalingGroup env(String name, Secret secret) {
        secretBindings = bindings().with(name, secret);
        return this;
    }

    /**
     * Gives the replicas of the next {@link #deploy()} secrets in bulk, each value under its own name.
     *
     * @param secrets the secrets
     * @return this group
     */
    public ScalingGroup secrets(Secret... secrets) {
        secretBindings = bindings().withBulk(List.of(secrets));
        return this;
    }

    /**
     * Gives the replicas of the next {@link #deploy()} a workload identity of the group's environment: a token file
     * the server rotates, named by {@code CHALK_WEB_IDENTITY_TOKEN_FILE}, and the server's address in
     * {@code CHALK_COMPUTE_TARGET}, so that the SDK inside a replica works with no configuration.
     *
     * @param chalkIdentity whether replicas get an identity
     * @return this group
     */
    public ScalingGroup chalkIdentity(boolean chalkIdentity) {
        ChalkContainerSpec.Builder container = spec.getContainerSpec().toBuilder();
        if (chalkIdentity) {
            container.setChalkWorkloadIdentity(ChalkWorkloadIdentity.getDefaultInstance());
        } else {
            container.clearChalkWorkloadIdentity();
        }
        spec = spec.toBuilder().setContainerSpec(container).build();
        return this;
    }

    /**
     * What the replicas of the next {@link #deploy()} may reach on the network; without a policy they have none. See
     * {@link NetworkPolicy}.
     *
     * @param policy the policy
     * @return this group
     */
    public ScalingGroup network(NetworkPolicy policy) {
        this.network = Objects.requireNonNull(policy, "policy");
        return this;
    }

    /**
     * Gives the replicas' requests to {@code hosts} a credential the replicas never hold: the variable named after the
     * secret holds a placeholder that the egress proxy replaces by the secret's value in headers to those hosts only
     * (see {@link Credential}). The hosts are allowed as well.
     *
     * @param hosts  exact names or {@code *.} wildcards
     * @param secret {@link Secret#fromChalkEnv} or {@link Secret#fromLocalEnv}
     * @return this group
     */
    public ScalingGroup addCredentials(List<String> hosts, Secret secret) {
        credentials.add(new Credential(hosts, secret));
        return this;
    }

    /**
     * As {@link #addCredentials(List, Secret)} for one host and a Chalk secret.
     *
     * @param host       an exact name or a {@code *.} wildcard
     * @param secretName the Chalk secret; the variable of its name holds the placeholder
     * @return this group
     */
    public ScalingGroup addCredentials(String host, String secretName) {
        return addCredentials(List.of(host), Secret.fromChalkEnv(secretName));
    }

    private SecretBindings bindings() {
        return secretBindings == null ? SecretBindings.NONE : secretBindings;
    }

    /**
     * Creates the group, or appends a revision to it, with the current spec.
     *
     * @return this group
     * @throws ChalkComputeException when the server refuses
     */
    public ScalingGroup deploy() {
        if (secretBindings != null) {
            SecretsClient client = secrets != null ? secrets : new SecretsClient(stubChannel());
            SecretsClient.References refs = client.references(secretBindings);
            spec = spec.toBuilder()
                    .setContainerSpec(spec.getContainerSpec().toBuilder()
                            .clearSecretRefs()
                            .addAllSecretRefs(refs.refs()))
                    .build();
            secretBindings = null;
        }
        if (network != null || !credentials.isEmpty()) {
            SecretsClient client = secrets != null ? secrets : new SecretsClient(stubChannel());
            NetworkSpecs.Compiled compiled = NetworkSpecs.compile(network, credentials, client);
            ChalkContainerSpec.Builder container =
                    spec.getContainerSpec().toBuilder().clearNetworkPolicy().putAllEnvVars(compiled.env());
            compiled.policy().ifPresent(container::setNetworkPolicy);
            spec = spec.toBuilder().setContainerSpec(container).build();
            network = null;
            credentials.clear();
        }
        ScalingGroupResponse group = id == null
                ? ServerCall.run(
                                ResourceKind.SCALING_GROUP,
                                () -> stub.createScalingGroup(CreateScalingGroupRequest.newBuilder()
                                        .setSpec(spec)
                                        .build()))
                        .getScalingGroup()
                : ServerCall.run(
                                ResourceKind.SCALING_GROUP,
                                () -> stub.updateScalingGroup(UpdateScalingGroupRequest.newBuilder()
                                        .setScalingGroupId(id)
                                        .setSpec(spec)
                                        .build()))
                        .getScalingGroup();
        id = group.getId();
        observe(group);
        return this;
    }

    /**
     * Every revision, oldest first, with the current one marked.
     *
     * @return the revisions
     * @throws IllegalStateException when the group has not been deployed
     */
    public List<ScalingGroupRevision> revisions() {
        String groupId = requireId();
        refresh();
        List<ScalingGroupRevision> revisions = new ArrayList<>();
        String cursor = null;
        do {
            var request = ListScalingGroupRevisionsRequest.newBuilder().setScalingGroupId(groupId);
            if (cursor != null) {
                request.setCursor(cursor);
            }
            ListScalingGroupRevisionsResponse page =
                    ServerCall.run(ResourceKind.SCALING_GROUP, () -> stub.listScalingGroupRevisions(request.build()));
            page.getRevisionsList().forEach(r -> revisions.add(ScalingGroupRevision.of(r, readiness.revisionId())));
            cursor = page.hasNextCursor() && !page.getNextCursor().isEmpty() ? page.getNextCursor() : null;
        } while (cursor != null);
        revisions.sort(Comparator.comparing(ScalingGroupRevision::createdAt));
        return revisions;
    }

    /**
     * Serves an earlier revision again: all traffic goes to it.
     *
     * @param revisionId the revision
     * @return this group
     * @throws ai.chalk.compute.error.ScalingGroupNotFoundException when the revision (or the group) is unknown
     */
    public ScalingGroup rollback(String revisionId) {
        String groupId = requireId();
        observe(ServerCall.run(
                        ResourceKind.SCALING_GROUP,
                        () -> stub.updateScalingGroup(UpdateScalingGroupRequest.newBuilder()
                                .setScalingGroupId(groupId)
                                .setTraffic(ScalingGroupTraffic.newBuilder()
                                        .addTargets(ScalingGroupTrafficTarget.newBuilder()
                                                .setScalingGroupRevisionId(revisionId)
                                                .setPercent(100)))
                                .build()))
                .getScalingGroup());
        return this;
    }

    /**
     * Reads the group's current revision and readiness from the server.
     *
     * @return the readiness
     */
    public Readiness refresh() {
        String groupId = requireId();
        observe(ServerCall.run(
                        ResourceKind.SCALING_GROUP,
                        () -> stub.getScalingGroup(GetScalingGroupRequest.newBuilder()
                                .setId(groupId)
                                .build()))
                .getScalingGroup());
        return readiness;
    }

    /**
     * Waits until the group's current revision has as many ready replicas as its minimum asks, showing the count as
     * it changes in the progress display ({@code │ › Waiting for replicas 1/2}; the client's display, or
     * {@link ProgressDisplay#fromEnv()} for a group made over a channel).
     *
     * @param timeout how long to wait
     * @return the readiness once ready
     * @throws ai.chalk.compute.error.FailedPreconditionException when the server reports that its replicas cannot
     *     start, with the reason
     * @throws ChalkComputeException {@code DEADLINE_EXCEEDED} when it is not ready in time
     */
    public Readiness awaitReady(java.time.Duration timeout) {
        requireId();
        int wanted = spec.getScalingSpec().getMinReplicas();
        return new ReadinessWait(progress, "Scaling group \"" + name + "\"").await(this::refresh, wanted, timeout);
    }

    /** Deletes the group and all its revisions. */
    public void delete() {
        String groupId = requireId();
        ServerCall.run(
                ResourceKind.SCALING_GROUP,
                () -> stub.deleteScalingGroup(
                        DeleteScalingGroupRequest.newBuilder().setId(groupId).build()));
    }

    /** The group's name. */
    public String name() {
        return name;
    }

    /** The group's stable id, once deployed. */
    public Optional<String> id() {
        return Optional.ofNullable(id);
    }

    /** The readiness last read from the server, once deployed. */
    public Optional<Readiness> readiness() {
        return Optional.ofNullable(readiness);
    }

    /** The spec the next {@link #deploy()} sends. */
    public ScalingGroupSpec spec() {
        return spec;
    }

    private void observe(ScalingGroupResponse group) {
        Readiness next = Readiness.of(group);
        if (next.differsFrom(readiness)) {
            log.info("scaling group {}: {}", name, next);
        }
        readiness = next;
        spec = group.hasSpec() ? group.getSpec() : spec;
    }

    private io.grpc.Channel stubChannel() {
        return stub.getChannel();
    }

    private String requireId() {
        if (id == null) {
            throw new IllegalStateException("scaling group " + name + " has not been deployed; call deploy() first");
        }
        return id;
    }

    @Override
    public String toString() {
        return "ScalingGroup[" + name + (id == null ? ", not deployed" : ", " + id) + "]";
    }
}
