package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.auth.BearerTokens;
import ai.chalk.compute.server.auth.Caller;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;

/**
 * What deployed code may do through the server socket its replicas see: the calls a function needs (create sandboxes
 * and use the ones created this way, build images, call functions, read volumes and the catalog, call models through
 * the AI router), and nothing that
 * reaches another tenant's sandboxes or changes what is deployed. Every other method is refused with
 * {@code PERMISSION_DENIED}; a sandbox that was not created through this socket, by the same sandbox with a workload
 * identity or by a function of the same environment, answers {@code NOT_FOUND}, as if it did not exist. Without this, code in any
 * replica could list every sandbox on the server and run commands in them.
 * Nor may a sandbox it creates read its environment's secrets, which the secrets services refuse it: a create naming
 * {@code secret_refs} or a network policy's {@code headers_secrets} is refused, and one from a snapshot is let through
 * only for a snapshot taken through this socket (another sandbox's files may hold what its secrets gave it). Its builds
 * name no {@code tag} (the environment's name for an image, which its developers' sandboxes would then run), and the
 * volumes its sandboxes mount are read-only ({@code SandboxManager}, for every workload caller).
 */
final class WorkerScope implements ServerInterceptor {

    /** How a method is treated. */
    private enum Rule {
        ALLOW,
        CREATES_SANDBOX,
        BUILDS_UNTAGGED,
        OWN_SANDBOX,
        SNAPSHOTS_OWN_SANDBOX
    }

    private static final Map<String, Rule> RULES = rules();

    /** How the subject of a sandbox's workload identity starts ({@code SandboxIdentities}). */
    private static final String SANDBOX_SUBJECT = "sandbox:";

    /** How many sandboxes that ended the scope still answers for (with their end), the oldest forgotten first. */
    static final int KEPT_ENDED = 4096;

    /**
     * The sandboxes made through the socket, by id, with the keys of the workloads that made them: one workload's are
     * not another's, though both act in one environment (a sandbox given a workload identity, running untrusted code,
     * reached the sandboxes a function had made and passed its secrets to).
     */
    private final Map<String, Set<String>> created = new ConcurrentHashMap<>();

    /** Of {@link #created}, the sandboxes that ended, oldest first (guarded by itself). */
    private final ArrayDeque<String> ended = new ArrayDeque<>();

    /**
     * Sandboxes that ended before their create was answered (a lifetime of a millisecond), so not yet in
     * {@link #created}: the last {@value #KEPT_ENDED} (guarded by {@link #ended}).
     */
    private final Set<String> endedUnseen = Collections.newSetFromMap(new LinkedHashMap<String, Boolean>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > KEPT_ENDED;
        }
    });

    /** The snapshots made through the socket, each as its workload's key and its id. */
    private final Set<String> snapshots = ConcurrentHashMap.newKeySet();

    private static Map<String, Rule> rules() {
        Map<String, Rule> r = new ConcurrentHashMap<>();
        for (String s : List.of("chalk.sandbox.v1.SandboxService", "chalk.sandbox.v2.SandboxService")) {
            r.put(s + "/CreateSandbox", Rule.CREATES_SANDBOX);
            for (String m : List.of("GetSandbox", "TerminateSandbox", "SuspendSandbox", "ResumeSandbox", "Exec")) {
                r.put(s + "/" + m, Rule.OWN_SANDBOX);
            }
        }
        for (String m : List.of("ExecCommand", "OpenSession", "GetSession", "ListSessions")) {
            r.put("chalk.sandbox.v2.SandboxProcessService/" + m, Rule.OWN_SANDBOX);
        }
        r.put("chalk.sandbox.v2.SandboxSnapshotService/CreateSandboxSnapshot", Rule.SNAPSHOTS_OWN_SANDBOX);
        r.put("chalk.sandbox.v1.SandboxRuntimeService/ExecutePython", Rule.OWN_SANDBOX);
        r.put("chalk.sandbox.v1.CustomImageService/BuildCustomImage", Rule.BUILDS_UNTAGGED);
        for (String m : List.of(
                "GetCustomImage",
                "GetOrBuildCustomImage",
                "StreamCustomImageBuildUpdates",
                "GetCustomImageBuild",
                "GetCustomImageBuildLogs")) {
            r.put("chalk.sandbox.v1.CustomImageService/" + m, Rule.ALLOW);
        }
        r.put("chalk.runtime.v1.RemoteCallService/CallFunction", Rule.ALLOW);
        r.put("chalk.runtime.v1.AsyncRemoteCallService/EnqueueRemoteCall", Rule.ALLOW);
        r.put("chalk.runtime.v1.AsyncRemoteCallService/PollRemoteCall", Rule.ALLOW);
        for (String m : List.of(
                "GetExternalFunction",
                "ListExternalFunctions",
                "CallExternalFunction",
                "GetExternalFunctionVersion",
                "ListExternalFunctionVersions")) {
            r.put("chalk.externalfunctioncatalog.v1.ExternalFunctionCatalogService/" + m, Rule.ALLOW);
        }
        for (String m : List.of("GetVolume", "ListVolumes", "ListFiles", "GetFile")) {
            r.put("chalk.volume.v1.VolumeService/" + m, Rule.ALLOW);
        }
        // LLM judges deployed as scorers call models as the function's environment; the router adds the provider's
        // key, which the replica never sees
        r.put("chalk_compute.ai.v1.AiRouterService/Forward", Rule.ALLOW);
        r.put("grpc.health.v1.Health/Check", Rule.ALLOW);
        // not GetToken: the socket takes workload tokens alone, so a client's token is of no use here, and every
        // replica
        // asking with wrong secrets slowed every other replica's exchanges (failed sign-ins are counted per address,
        // and all of the socket's callers are one)
        r.put("chalk.server.v1.AuthService/GetWorkloadIdentityToken", Rule.ALLOW);
        // the SDK asks where queued function calls go; a workload is told to use this socket
        r.put("chalk.server.v1.TeamService/GetEnv", Rule.ALLOW);
        return Map.copyOf(r);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        String method = call.getMethodDescriptor().getFullMethodName();
        Rule rule = RULES.get(method);
        // read before the token is checked, which happens inside: a call whose token is forged goes no further
        String header = headers.get(BearerTokens.AUTHORIZATION);
        String owner = owner(header == null ? Optional.empty() : BearerTokens.claimedWorkload(header));
        if (rule == null) {
            call.close(
                    Status.PERMISSION_DENIED.withDescription(method + " is not available to deployed functions:"
                            + " a function's replica may create sandboxes and use those it created, build images, call"
                            + " functions, read volumes and call models through the AI router"),
                    new Metadata());
            return new ServerCall.Listener<>() {};
        }
        return switch (rule) {
            case ALLOW -> next.startCall(call, headers);
            case CREATES_SANDBOX -> createWithoutSecrets(call, headers, next, owner);
            case BUILDS_UNTAGGED -> buildWithoutTag(call, headers, next);
            case OWN_SANDBOX -> ownSandboxOnly(call, headers, next, owner);
            case SNAPSHOTS_OWN_SANDBOX ->
                ownSandboxOnly(
                        recording(call, (o, id) -> snapshots.add(o + id), "snapshot", owner), headers, next, owner);
        };
    }

    /**
     * Whose sandboxes and snapshots a call reaches, as a key: a sandbox given a workload identity (which may run
     * untrusted code) its own; the deployed functions of an environment one another's, as a function passes the
     * sandbox it made to another as an argument.
     */
    private static String owner(Optional<Caller> workload) {
        return workload.map(w -> w.environment() + "\u0000"
                                + (w.subject().startsWith(SANDBOX_SUBJECT) ? w.subject() : "deployed functions"))
                        .orElse("")
                + "\u0000";
    }

    /** {@code call}, with the {@code id} of its answers' {@code holder} field given to {@code record} with the owner. */
    private static <Q, R> ServerCall<Q, R> recording(
            ServerCall<Q, R> call, BiConsumer<String, String> record, String holder, String owner) {
        return new SimpleForwardingServerCall<>(call) {
            @Override
            public void sendMessage(R message) {
                if (message instanceof Message m) {
                    (holder.equals("sandbox") ? sandboxIds(m, holder) : heldIds(m, holder))
                            .forEach(id -> record.accept(owner, id));
                }
                super.sendMessage(message);
            }
        };
    }

    /** Records that the workload {@code owner} created the sandbox {@code id}. */
    void created(String owner, String id) {
        created.computeIfAbsent(id, k -> ConcurrentHashMap.newKeySet()).add(owner);
        synchronized (ended) {
            if (endedUnseen.remove(id)) {
                forgetLater(id);
            }
        }
    }

    /** Whether the workload {@code owner} created the sandbox {@code id}, and the scope still answers for it. */
    boolean createdBy(String owner, String id) {
        Set<String> owners = created.get(id);
        return owners != null && owners.contains(owner);
    }

    /**
     * The sandbox {@code id} ended: it is answered for (with its end) until {@value #KEPT_ENDED} more have ended. The
     * scope remembered every sandbox made through the socket for as long as the server ran, so deployed code creating
     * sandboxes that its developers' client terminated, in a loop, grew the server's heap without bound.
     */
    void sandboxEnded(String id) {
        synchronized (ended) {
            if (created.containsKey(id)) {
                forgetLater(id);
            } else {
                endedUnseen.add(id); // most are sandboxes made elsewhere; some, made here, not answered for yet
            }
        }
    }

    /** Queues an ended sandbox to be forgotten once {@value #KEPT_ENDED} more have ended (holding {@link #ended}). */
    private void forgetLater(String id) {
        ended.addLast(id);
        while (ended.size() > KEPT_ENDED) {
            created.remove(ended.removeFirst());
        }
    }

    /** How many sandboxes the scope answers for. */
    int sandboxesKnown() {
        return created.size();
    }

    /** A create, refused when it would give the new sandbox secrets or another sandbox's files. */
    private <Q, R> ServerCall.Listener<Q> createWithoutSecrets(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next, String owner) {
        return new RefusingListener<>(next.startCall(recording(call, this::created, "sandbox", owner), headers), call) {
            @Override
            Status refusal(Message m) {
                for (String snapshot : stringField(m, "snapshot_id")) {
                    if (!snapshots.contains(owner + snapshot)) {
                        return Status.NOT_FOUND.withDescription("snapshot " + snapshot + " not found");
                    }
                }
                FieldDescriptor specField = m.getDescriptorForType().findFieldByName("spec");
                if (specField != null && m.hasField(specField) && m.getField(specField) instanceof Message spec) {
                    if (spec.getDescriptorForType().findFieldByName("secret_refs") != null
                            && spec.getRepeatedFieldCount(
                                            spec.getDescriptorForType().findFieldByName("secret_refs"))
                                    > 0) {
                        return secretsRefused("secret_refs");
                    }
                    if (namesHeaderSecrets(spec)) {
                        return secretsRefused("network_policy headers_secrets");
                    }
                }
                return null;
            }
        };
    }

    /**
     * A build, refused when it names a {@code tag}: a tag is its environment's name for an image, which every
     * sandbox and replica of the environment naming that image then runs (the developers' too, with their secrets),
     * so deployed code tagging {@code python:3.12-slim} would run its image in their place.
     */
    private static <Q, R> ServerCall.Listener<Q> buildWithoutTag(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        return new RefusingListener<>(next.startCall(call, headers), call) {
            @Override
            Status refusal(Message m) {
                return stringField(m, "tag").isEmpty()
                        ? null
                        : Status.PERMISSION_DENIED.withDescription("tag is not available to deployed functions: a tag"
                                + " names an image for the whole environment; build without one and use the image"
                                + " name the build returns");
            }
        };
    }

    private static Status secretsRefused(String field) {
        return Status.PERMISSION_DENIED.withDescription(field + " is not available to deployed functions: a sandbox"
                + " a function creates gets no secrets of its environment (give the function the secrets it needs"
                + " in its own spec's secret_refs, and pass on what the sandbox must have)");
    }

    /** Whether {@code m} or a message inside it has a {@code headers_secrets} entry. */
    private static boolean namesHeaderSecrets(Message m) {
        for (Map.Entry<FieldDescriptor, Object> f : m.getAllFields().entrySet()) {
            if (f.getKey().getName().equals("headers_secrets")) {
                return true;
            }
            if (f.getKey().getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                List<?> values = f.getKey().isRepeated() ? (List<?>) f.getValue() : List.of(f.getValue());
                for (Object v : values) {
                    if (v instanceof Message inner && namesHeaderSecrets(inner)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * A call's listener that reads each request before it goes on, and closes the call at the first one
     * {@link #refusal} refuses; fails closed on a request it cannot read.
     */
    private abstract static class RefusingListener<Q, R> extends SimpleForwardingServerCallListener<Q> {
        private final ServerCall<Q, R> call;
        private boolean refused;

        RefusingListener(ServerCall.Listener<Q> next, ServerCall<Q, R> call) {
            super(next);
            this.call = call;
        }

        /** Why {@code m} is refused; null to let it through. */
        abstract Status refusal(Message m);

        @Override
        public void onMessage(Q message) {
            if (refused) {
                return;
            }
            Status why = message instanceof Message m
                    ? refusal(m)
                    : Status.INTERNAL.withDescription("the worker socket cannot check this request");
            if (why != null) {
                refused = true;
                call.close(why, new Metadata());
                return;
            }
            super.onMessage(message);
        }

        @Override
        public void onHalfClose() {
            if (!refused) {
                super.onHalfClose();
            }
        }
    }

    private <Q, R> ServerCall.Listener<Q> ownSandboxOnly(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next, String owner) {
        boolean topLevelId =
                call.getMethodDescriptor().getFullMethodName().startsWith("chalk.sandbox.v2.SandboxService/");
        return new RefusingListener<>(next.startCall(call, headers), call) {
            @Override
            Status refusal(Message m) {
                List<String> ids = sandboxIds(m, null);
                if (topLevelId) {
                    ids.addAll(stringField(m, "id"));
                }
                for (String id : ids) {
                    if (!createdBy(owner, id)) {
                        return Status.NOT_FOUND.withDescription("sandbox " + id + " not found");
                    }
                }
                return null;
            }
        };
    }

    /**
     * Every {@code sandbox_id} in {@code m} and in the messages it holds (an exec's init, a session's new process),
     * and, with {@code holder}, the {@code id} of a field of that name ({@code CreateSandboxResponse.sandbox}).
     */
    private static List<String> sandboxIds(Message m, String holder) {
        List<String> ids = new ArrayList<>(stringField(m, "sandbox_id"));
        for (Map.Entry<FieldDescriptor, Object> f : m.getAllFields().entrySet()) {
            if (f.getKey().getJavaType() == FieldDescriptor.JavaType.MESSAGE
                    && !f.getKey().isRepeated()) {
                Message inner = (Message) f.getValue();
                if (holder != null && f.getKey().getName().equals(holder)) {
                    ids.addAll(stringField(inner, "id"));
                }
                ids.addAll(stringField(inner, "sandbox_id"));
            }
        }
        return ids;
    }

    /** The {@code id} of {@code m}'s field {@code holder} ({@code CreateSandboxSnapshotResponse.snapshot}). */
    private static List<String> heldIds(Message m, String holder) {
        FieldDescriptor f = m.getDescriptorForType().findFieldByName(holder);
        return f != null && f.getJavaType() == FieldDescriptor.JavaType.MESSAGE && !f.isRepeated() && m.hasField(f)
                ? stringField((Message) m.getField(f), "id")
                : new ArrayList<>();
    }

    private static List<String> stringField(Message m, String name) {
        FieldDescriptor f = m.getDescriptorForType().findFieldByName(name);
        if (f == null || f.getJavaType() != FieldDescriptor.JavaType.STRING || f.isRepeated()) {
            return new ArrayList<>();
        }
        String v = (String) m.getField(f);
        return v.isEmpty() ? new ArrayList<>() : new ArrayList<>(List.of(v));
    }
}
