package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.common.v1.ChalkError;
import ai.chalk.compute.proto.common.v1.ErrorCode;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallStatus;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.grpc.UnsentAnswers;
import ai.chalk.compute.server.store.CallStore;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import ai.chalk.compute.server.threads.EnvironmentShares;
import ai.chalk.compute.server.worker.ReplicaPool;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls of function versions: routed to their replica pools, answered synchronously (the worker's status and
 * trailers forwarded, with {@code chalk-call-id}) or queued and answered to polls.
 */
public final class FunctionCalls {

    private static final Logger log = LoggerFactory.getLogger(FunctionCalls.class);
    /** The call id trailer the server adds. */
    public static final Metadata.Key<String> CALL_ID =
            Metadata.Key.of("chalk-call-id", Metadata.ASCII_STRING_MARSHALLER);
    /** The protocol's error trailer, {@code chalk-error-bin} (docs/functions-protocol.md): a user failure. */
    public static final Metadata.Key<ChalkError> ERROR =
            Metadata.Key.of("chalk-error-bin", ProtoUtils.metadataMarshaller(ChalkError.getDefaultInstance()));

    private static final int MAX_CACHED_OPTIONS = 1024;

    private final FunctionWorkers workers;
    private final CallStore calls;
    private final ExecutorService executor;
    private final Map<String, FunctionOptions> options = new ConcurrentHashMap<>();

    /**
     * Queued calls not finished yet: each holds a thread (waiting for a replica with room) and its arguments, so there
     * are at most this many at once, one environment's at most half.
     */
    static final int MAX_QUEUED = 1024;

    private final EnvironmentShares queued = new EnvironmentShares("queued calls", MAX_QUEUED);

    /**
     * The most bytes of results and errors one environment's finished, unread queued calls may hold in the store,
     * which every environment shares: past it, no more calls are queued until polls read them (or they expire).
     */
    static final long MAX_UNREAD_BYTES = 1L << 30;

    /**
     * The arguments of the calls under way or queued, per environment: each is held until its call ends, which waits
     * for a replica with room as long as its function's timeout.
     */
    private final EnvironmentBytes callBytes;
    /** Serialize the check of an environment's unread results with the write of one more ({@link #unreadLock}). */
    private final Object[] unreadLocks =
            java.util.stream.Stream.generate(Object::new).limit(64).toArray();

    public FunctionCalls(
            FunctionWorkers workers, CallStore calls, ExecutorService executor, EnvironmentBytes callBytes) {
        this.workers = workers;
        this.calls = calls;
        this.executor = executor;
        this.callBytes = callBytes;
    }

    /**
     * Reserves the bytes of a call's arguments in its environment's share; the returned hold gives them back once.
     *
     * @throws StatusRuntimeException RESOURCE_EXHAUSTED, with {@code chalk-call-id}, past the share or the budget
     */
    private Runnable hold(VersionRecord v, long bytes, String callId) {
        EnvironmentBytes.Account account = callBytes.of(v.environment());
        EnvironmentBytes.Refusal refused = account.tryReserve(bytes);
        if (refused != null) {
            throw withCallId(
                    Status.RESOURCE_EXHAUSTED
                            .withDescription("the function calls under way or queued hold too many bytes of arguments: "
                                    + account.explain(refused)
                                    + "; wait for some to finish (a function that does not answer holds its callers' for"
                                    + " as long as its timeout)")
                            .asRuntimeException(),
                    callId);
        }
        AtomicBoolean released = new AtomicBoolean();
        return () -> {
            if (released.compareAndSet(false, true)) {
                account.release(bytes);
            }
        };
    }

    /**
     * Calls a version and returns the worker's answer.
     *
     * @throws StatusRuntimeException the worker's status and trailers plus {@code chalk-call-id}, or UNAVAILABLE
     */
    public CallFunctionResponse call(VersionRecord v, CallFunctionRequest request) {
        return call(v, request, "call-" + localCallId());
    }

    /**
     * Calls a version as {@link #call(VersionRecord, CallFunctionRequest)} does, without holding the calling thread
     * while the worker runs it (see {@link ReplicaPool#callAsync}): {@code outcome} gets the worker's answer, or
     * exactly one failure with {@code chalk-call-id} among its trailers. Failures found before the call is sent
     * (an unknown function name, no replica) are thrown instead.
     *
     * @throws StatusRuntimeException as {@link #call(VersionRecord, CallFunctionRequest)} throws before the call is
     *                                sent, with {@code chalk-call-id}
     */
    public void callAsync(VersionRecord v, CallFunctionRequest request, ReplicaPool.Outcome outcome) {
        String callId = "call-" + localCallId();
        FunctionOptions o = checked(v, request, callId);
        Runnable release = hold(v, request.getSerializedSize(), callId);
        try {
            workers.poolFor(v).callAsync(request, callId, o.timeout(), new ReplicaPool.Outcome() {
                @Override
                public void answered(CallFunctionResponse response) {
                    release.run();
                    outcome.answered(response);
                }

                @Override
                public void failed(StatusRuntimeException status) {
                    release.run();
                    outcome.failed(withCallId(status, callId));
                }
            });
        } catch (StatusRuntimeException e) {
            release.run();
            throw withCallId(e, callId);
        } catch (RuntimeException | Error e) {
            release.run();
            throw e;
        }
    }

    /**
     * A random UUID for a synchronous call's id, which only names the call in its trailers and logs. Queued calls'
     * ids are read back by whoever knows them, so they keep {@link UUID#randomUUID()}'s secure randomness; this one
     * spares each call the shared secure generator.
     */
    private static UUID localCallId() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        return new UUID(
                (random.nextLong() & ~0xF000L) | 0x4000L, // version 4
                (random.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L); // IETF variant
    }

    private CallFunctionResponse call(VersionRecord v, CallFunctionRequest request, String callId) {
        Runnable release = hold(v, request.getSerializedSize(), callId);
        try {
            return callHeld(v, request, callId, () -> true);
        } finally {
            release.run();
        }
    }

    /** Calls a version, the request's bytes held by the caller. */
    private CallFunctionResponse callHeld(
            VersionRecord v, CallFunctionRequest request, String callId, BooleanSupplier proceed) {
        FunctionOptions o = checked(v, request, callId);
        try {
            return workers.poolFor(v).call(request, callId, o.timeout(), proceed);
        } catch (StatusRuntimeException e) {
            throw withCallId(e, callId);
        }
    }

    /** The version's options, once the request names one of the functions it serves; NOT_FOUND otherwise. */
    private FunctionOptions checked(VersionRecord v, CallFunctionRequest request, String callId) {
        FunctionOptions o = options(v);
        if (o.functions().stream().noneMatch(e -> e.name().equals(request.getName()))) {
            throw withCallId(
                    Status.NOT_FOUND
                            .withDescription("version " + v.version() + " serves no function \""
                                    + request.getName() + "\"; it serves "
                                    + o.functions().stream()
                                            .map(FunctionOptions.Entry::name)
                                            .toList())
                            .asRuntimeException(),
                    callId);
        }
        return o;
    }

    /** A version's options, read from its stored request once: a version never changes. */
    private FunctionOptions options(VersionRecord v) {
        FunctionOptions o = options.get(v.id());
        if (o == null) {
            o = FunctionOptions.of(FunctionWorkers.request(v).getConfig());
            if (options.size() >= MAX_CACHED_OPTIONS) {
                options.clear(); // many versions called: start over rather than keep them all
            }
            options.put(v.id(), o);
        }
        return o;
    }

    private static StatusRuntimeException withCallId(StatusRuntimeException e, String callId) {
        Metadata trailers = new Metadata();
        if (e.getTrailers() != null) {
            trailers.merge(e.getTrailers());
        }
        trailers.removeAll(CALL_ID);
        trailers.put(CALL_ID, callId);
        return new StatusRuntimeException(e.getStatus(), trailers);
    }

    /**
     * Queues a call of a version (in its function's environment) and returns its id; it runs in the background.
     *
     * @throws ai.chalk.compute.server.error.ComputeException (RESOURCE_EXHAUSTED) when the environment has its share
     *     of the server's {@value #MAX_QUEUED} queued calls not finished yet, or the server all of them
     */
    public String enqueue(VersionRecord v, String function, String name, ByteString args) {
        String environment = v.environment();
        long unread = calls.unreadBytes(environment);
        if (unread > MAX_UNREAD_BYTES) {
            throw ComputeException.exhausted("this environment's finished queued calls hold " + (unread >> 20)
                    + " MiB of results no poll has read, past the " + (MAX_UNREAD_BYTES >> 20) + " MiB the server"
                    + " keeps for one environment: poll them (PollRemoteCall) before queueing more; unread results go"
                    + " " + CallStore.KEPT_UNREAD.toHours() + " hours after they finished");
        }
        EnvironmentShares.Place place = queued.take(environment, FunctionCalls::refusal);
        String callId = "call-" + UUID.randomUUID();
        CallFunctionRequest request = CallFunctionRequest.newBuilder()
                .setName(name)
                .setFeatherStream(args)
                .build();
        Runnable release;
        try {
            release = hold(v, request.getSerializedSize(), callId);
        } catch (RuntimeException | Error e) {
            place.close();
            throw e;
        }
        try {
            calls.insert(environment, callId, function, v.id(), name, args.toByteArray());
            executor.execute(() -> {
                try {
                    runQueued(v, callId, request, place);
                } finally {
                    place.close();
                    release.run();
                }
            });
            return callId;
        } catch (RuntimeException | Error e) {
            place.close(); // not queued: nothing runs it
            release.run();
            throw e;
        }
    }

    private static String refusal(EnvironmentShares.Refusal refusal, EnvironmentShares queued, String environment) {
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? "this environment has " + queued.held(environment) + " queued calls not finished yet, the most one"
                        + " environment may (half of the " + MAX_QUEUED + " the server queues; each waits on a server"
                        + " thread): wait for them to run before queueing more (a purged call lets go of its place once"
                        + " a replica has room)"
                : "the server has " + queued.held() + " queued calls not finished yet, its limit: try again once some"
                        + " have run";
    }

    /** The lock of an environment's unread results, one of a fixed few (striped by the environment's hash). */
    private Object unreadLock(String environment) {
        return unreadLocks[Math.floorMod(environment.hashCode(), unreadLocks.length)];
    }

    /**
     * Runs a queued call: PENDING until a replica has room for it (PurgeQueue removes it until then), then RUNNING.
     * Its place is given back before its outcome is stored: a client that queues its next call as soon
     * as a poll shows this one finished finds the place free.
     */
    private void runQueued(VersionRecord v, String callId, CallFunctionRequest request, EnvironmentShares.Place place) {
        if (calls.find(callId).isEmpty()) {
            return; // purged before it started
        }
        try {
            CallFunctionResponse r = callHeld(v, request, callId, () -> calls.start(callId));
            place.close();
            // the check and the write at once per environment: results finishing together all read the same total
            // before any was written, and 512 queued calls of 33 MiB put 16 GB past the bound
            synchronized (unreadLock(v.environment())) {
                long unread = calls.unreadBytes(v.environment());
                if (unread + r.getFeatherStream().size() > MAX_UNREAD_BYTES) {
                    // the check at enqueue counts finished calls only: those queued at once all passed it
                    calls.finish(
                            callId,
                            CallStore.State.FAILED,
                            Optional.empty(),
                            Optional.of(ChalkError.newBuilder()
                                    .setCode(ErrorCode.ERROR_CODE_INTERNAL_SERVER_ERROR_UNSPECIFIED)
                                    .setMessage("the call finished, but its result was not kept: this environment's"
                                            + " finished queued calls hold " + (unread >> 20)
                                            + " MiB of results no poll"
                                            + " has read, past the " + (MAX_UNREAD_BYTES >> 20)
                                            + " MiB the server keeps"
                                            + " for one environment; poll results as they finish")
                                    .build()
                                    .toByteArray()));
                    return;
                }
                calls.finish(
                        callId,
                        CallStore.State.COMPLETED,
                        Optional.of(r.getFeatherStream().toByteArray()),
                        Optional.empty());
            }
        } catch (StatusRuntimeException e) {
            if (calls.find(callId).isEmpty()) {
                return; // purged while it waited: nobody will poll it
            }
            ChalkError error = e.getTrailers() != null && e.getTrailers().containsKey(ERROR)
                    ? e.getTrailers().get(ERROR)
                    : ChalkError.newBuilder()
                            .setCode(ErrorCode.ERROR_CODE_INTERNAL_SERVER_ERROR_UNSPECIFIED)
                            .setMessage(e.getStatus().getCode() + ": "
                                    + e.getStatus().getDescription())
                            .build();
            place.close();
            calls.finish(callId, CallStore.State.FAILED, Optional.empty(), Optional.of(error.toByteArray()));
        } catch (RuntimeException e) {
            log.error("Queued call {} failed unexpectedly", callId, e);
            place.close();
            calls.finish(
                    callId,
                    CallStore.State.FAILED,
                    Optional.empty(),
                    Optional.of(ChalkError.newBuilder()
                            .setMessage("internal server error: " + e)
                            .build()
                            .toByteArray()));
        }
    }

    /**
     * The status of one of the environment's queued calls; a finished call's result is returned once and then
     * forgotten, unless the server has no room to send it (RESOURCE_EXHAUSTED: it stays, to be polled again). Another
     * environment's call is NOT_FOUND, as one never queued.
     */
    public PollRemoteCallResponse poll(String environment, String callId) {
        CallStore.CallRecord r = calls.find(callId)
                .filter(c -> c.environment().equals(environment))
                .orElseThrow(() -> Status.NOT_FOUND
                        .withDescription("no queued" + " call \"" + callId
                                + "\": it was never queued, was purged, or its result was already read")
                        .asRuntimeException());
        PollRemoteCallResponse.Builder b = PollRemoteCallResponse.newBuilder();
        switch (r.state()) {
            case PENDING -> b.setStatus(RemoteCallStatus.REMOTE_CALL_STATUS_PENDING);
            case RUNNING -> b.setStatus(RemoteCallStatus.REMOTE_CALL_STATUS_RUNNING);
            case COMPLETED ->
                b.setStatus(RemoteCallStatus.REMOTE_CALL_STATUS_COMPLETED)
                        .addResults(CallFunctionResponse.newBuilder()
                                .setFeatherStream(ByteString.copyFrom(r.result().orElseThrow())));
            case FAILED ->
                b.setStatus(RemoteCallStatus.REMOTE_CALL_STATUS_FAILED).addErrors(parse(r.error()));
        }
        PollRemoteCallResponse response = b.build();
        if (r.state() == CallStore.State.COMPLETED || r.state() == CallStore.State.FAILED) {
            // room for the answer first: one the server would not send must not be forgotten
            UnsentAnswers.reserveAnswer(response.getSerializedSize());
            calls.delete(callId);
        }
        return response;
    }

    private static ChalkError parse(Optional<byte[]> bytes) {
        try {
            return ChalkError.parseFrom(bytes.orElse(new byte[0]));
        } catch (InvalidProtocolBufferException e) {
            return ChalkError.newBuilder()
                    .setMessage("the stored error is unreadable")
                    .build();
        }
    }

    public CallStore store() {
        return calls;
    }
}
