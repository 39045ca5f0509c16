package ai.chalk.compute.server.secret;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRule;
import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.server.store.FunctionStore;
import ai.chalk.compute.server.store.SandboxStore;
import ai.chalk.compute.server.store.ScalingGroupStore;
import ai.chalk.compute.server.store.ScalingGroupStore.RevisionRecord;
import ai.chalk.compute.server.store.SnapshotStore;
import com.google.protobuf.InvalidProtocolBufferException;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Which secrets the workloads of an environment name, read from their records in the store: the {@code secret_refs}
 * of sandboxes' and snapshots' container specs, of function versions' and scaling-group revisions' specs (and the
 * secrets a spec names elsewhere: managed SSH keys, header secrets of network rules). Only names: values are never
 * read here.
 *
 * <p>A record that cannot be read fails the whole answer (an exception), so that a damaged row never lets a secret go
 * that a workload may still need.
 */
public final class SecretReferences {

    private final SandboxStore sandboxes;
    private final SnapshotStore snapshots;
    private final FunctionStore functions;
    private final ScalingGroupStore groups;

    public SecretReferences(
            SandboxStore sandboxes, SnapshotStore snapshots, FunctionStore functions, ScalingGroupStore groups) {
        this.sandboxes = sandboxes;
        this.snapshots = snapshots;
        this.functions = functions;
        this.groups = groups;
    }

    /**
     * The secrets named by what exists in the environment and may start processes with them: sandboxes that have not
     * ended, snapshots that start sandboxes (or will once taken), function versions that are not deleted (any of them
     * can be routed to again), and every revision of a scaling group that is not deleted (a rollback serves an old
     * one), except the revisions of deleted function versions.
     *
     * @throws IllegalStateException when a record cannot be read
     */
    public Set<String> inUse(String environment) {
        Set<String> names = new HashSet<>();
        sandboxes.unfinishedSpecs(environment).forEach(spec -> container(spec, "a sandbox", names::add));
        snapshots.usableSpecs(environment).forEach(spec -> container(spec, "a snapshot", names::add));
        functions.liveVersionRequests(environment).forEach(request -> version(request, names::add));
        Set<String> retired = functions.deletedVersionRevisions(environment);
        for (RevisionRecord r : groups.liveRevisions(environment)) {
            if (!retired.contains(r.id())) {
                revision(r.spec(), names::add);
            }
        }
        return names;
    }

    /**
     * The secrets named by the environment's workloads created at or after {@code since}, whether they still exist or
     * not (sandboxes, function versions, scaling-group revisions), each with when the newest of those was created.
     *
     * @throws IllegalStateException when a record cannot be read
     */
    public Map<String, Instant> namedSince(String environment, Instant since) {
        Map<String, Instant> newest = new HashMap<>();
        for (Map.Entry<Instant, byte[]> s : sandboxes.specsCreatedSince(environment, since)) {
            container(s.getValue(), "a sandbox", name -> newest.merge(name, s.getKey(), SecretReferences::later));
        }
        for (Map.Entry<Instant, byte[]> v : functions.versionRequestsCreatedSince(environment, since)) {
            version(v.getValue(), name -> newest.merge(name, v.getKey(), SecretReferences::later));
        }
        for (RevisionRecord r : groups.revisionsCreatedSince(environment, since)) {
            revision(r.spec(), name -> newest.merge(name, r.createdAt(), SecretReferences::later));
        }
        return newest;
    }

    private static Instant later(Instant a, Instant b) {
        return a.isAfter(b) ? a : b;
    }

    private static void container(byte[] spec, String of, Consumer<String> names) {
        try {
            named(ChalkContainerSpec.parseFrom(spec), names);
        } catch (InvalidProtocolBufferException e) {
            throw unreadable("the container spec of " + of, e);
        }
    }

    private static void version(byte[] request, Consumer<String> names) {
        try {
            named(
                    CreateExternalFunctionVersionRequest.parseFrom(request)
                            .getSpec()
                            .getContainerSpec(),
                    names);
        } catch (InvalidProtocolBufferException e) {
            throw unreadable("the request of a function version", e);
        }
    }

    private static void revision(byte[] spec, Consumer<String> names) {
        try {
            named(ScalingGroupSpec.parseFrom(spec).getContainerSpec(), names);
        } catch (InvalidProtocolBufferException e) {
            throw unreadable("the spec of a scaling-group revision", e);
        }
    }

    /** Every secret the spec names, including in the fields this server refuses (a record may predate that). */
    private static void named(ChalkContainerSpec spec, Consumer<String> names) {
        for (SecretRef ref : spec.getSecretRefsList()) {
            if (ref.getSourceCase() == SecretRef.SourceCase.SECRET_NAME) {
                names.accept(ref.getSecretName());
            }
        }
        spec.getManagedSshMap().values().forEach(ssh -> names.accept(ssh.getPrivateKeySecret()));
        spec.getNetworkPolicy().getAllowedHostsMap().values().stream()
                .flatMap(rules -> rules.getRulesList().stream())
                .map(NetworkPolicyRule::getTransformList)
                .flatMap(List::stream)
                .forEach(t -> t.getHeadersSecretsMap().values().forEach(names));
    }

    private static IllegalStateException unreadable(String what, InvalidProtocolBufferException e) {
        return new IllegalStateException(what + " in the store is unreadable (" + e.getMessage() + ")", e);
    }
}
