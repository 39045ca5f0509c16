package ai.chalk.compute.function.remote;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.RemoteExecutionException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.catalog.FunctionVersions;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunction;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionRequest;
import ai.chalk.compute.proto.runtime.v1.AsyncRemoteCallServiceGrpc;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.EnqueueRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallArgs;
import ai.chalk.compute.sandbox.SandboxClient;
import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A deployed function, called through the catalog. Arguments and results travel as Arrow. Given the function's local
 * {@link FunctionDefinition}, results come back as the declared Java type; attached by name or version id alone,
 * they take the generic Java form of the catalog's schemas ({@code Integer}, {@code String}, {@code List}, ...).
 * <pre>{@code
 * RemoteFunction score = RemoteFunction.fromName(client, registry.get("score").definition());
 * double s = (Double) score.call("some text", 3);
 * List<Object> many = score.callBatch(List.of(new Object[] {"a", 1}, new Object[] {"b", 2}));
 * CompletableFuture<Object> later = score.callAsync("queued", 1);
 * }</pre>
 * A failure of the function's own code raises {@link RemoteExecutionException}. Thread-safe.
 */
public final class RemoteFunction {

    /**
     * The largest result a call takes: as large as the largest request a Chalk Compute server takes (33 MiB), not only
     * gRPC's default 4 MiB. A larger one fails with RESOURCE_EXHAUSTED naming both sizes: split it over more calls.
     */
    private static final int MAX_RESULT_BYTES = 33 << 20;

    private final Channel channel;
    private final Supplier<Channel> queue;
    private final ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog;
    private final Codec codec;
    private final ExternalFunctionVersionKey key;
    private final Optional<String> versionId;
    private final String functionName;
    private final DecodeContext results;

    private RemoteFunction(
            Channel channel,
            Supplier<Channel> queue,
            Codec codec,
            ExternalFunctionVersionKey key,
            Optional<String> versionId,
            String functionName) {
        this.channel = channel;
        this.queue = queue;
        // a returned sandbox comes back as a handle on the server the function was called through
        this.results = DecodeContext.of(SandboxClient.forChannel(channel));
        this.catalog = catalog(channel);
        this.functionName = functionName;
        this.codec = codec;
        this.key = key;
        this.versionId = versionId;
    }

    /**
     * The function deployed under the definition's name, pinned to the version that is current now.
     *
     * @param client     the client
     * @param definition the function's local definition
     * @return the function
     * @throws ai.chalk.compute.error.FunctionNotFoundException when no function has that name
     */
    public static RemoteFunction fromName(SandboxClient client, FunctionDefinition definition) {
        ExternalFunctionVersion current = currentVersion(client.channel(), definition.name());
        return pinned(client.channel(), client::queuedCallChannel, current, new Codec.Typed(definition));
    }

    /**
     * A deployed function by name, pinned to the version that is current now.
     *
     * @param channel    the channel to the server
     * @param name       the deployed name
     * @param definition the function's local definition, for its argument and result types
     * @return the function
     * @throws ai.chalk.compute.error.FunctionNotFoundException when no function has that name
     */
    public static RemoteFunction fromName(Channel channel, String name, FunctionDefinition definition) {
        ExternalFunctionVersion current = currentVersion(channel, name);
        return pinned(channel, () -> channel, current, new Codec.Typed(definition));
    }

    /**
     * A deployed function by name, pinned to the version that is current now, with a local definition for its
     * argument and result types, when the deployed name is not the definition's.
     *
     * @param client     the client
     * @param name       the deployed name
     * @param definition the function's local definition
     * @return the function
     * @throws ai.chalk.compute.error.FunctionNotFoundException when no function has that name
     */
    public static RemoteFunction fromName(SandboxClient client, String name, FunctionDefinition definition) {
        ExternalFunctionVersion current = currentVersion(client.channel(), name);
        return pinned(client.channel(), client::queuedCallChannel, current, new Codec.Typed(definition));
    }

    /**
     * A deployed function by name, pinned to the version that is current now, without a local definition: arguments
     * and results take the generic Java form of the catalog's schemas ({@code Integer}, {@code String},
     * {@code List}, {@code Map}, {@code Instant}, ...; see {@link ai.chalk.compute.function.arrow.GenericJavaTypes}).
     *
     * @param client the client
     * @param name   the deployed name
     * @return the function
     * @throws ai.chalk.compute.error.FunctionNotFoundException when no function has that name
     * @throws IllegalArgumentException                         when a column, such as a struct, has no generic form
     */
    public static RemoteFunction fromName(SandboxClient client, String name) {
        ExternalFunctionVersion current = currentVersion(client.channel(), name);
        return pinned(client.channel(), client::queuedCallChannel, current, Codec.Generic.of(current));
    }

    /**
     * A deployed function by name, without a local definition, over a channel; see {@link #fromName(SandboxClient, String)}.
     *
     * @param channel the channel to the server
     * @param name    the deployed name
     * @return the function
     * @throws ai.chalk.compute.error.FunctionNotFoundException when no function has that name
     * @throws IllegalArgumentException                         when a column has no generic form
     */
    public static RemoteFunction fromName(Channel channel, String name) {
        ExternalFunctionVersion current = currentVersion(channel, name);
        return pinned(channel, () -> channel, current, Codec.Generic.of(current));
    }

    /**
     * The function of an immutable version.
     *
     * @param channel    the channel to the server
     * @param versionId  the version's id
     * @param definition the function's local definition
     * @return the function, always calling that version
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the version is unknown
     */
    public static RemoteFunction fromVersionId(Channel channel, String versionId, FunctionDefinition definition) {
        ExternalFunctionVersion version = version(channel, versionId);
        return pinned(channel, () -> channel, version, new Codec.Typed(definition));
    }

    /**
     * The function of an immutable version, without a local definition: arguments and results take the generic Java
     * form of the version's schemas.
     *
     * @param channel   the channel to the server
     * @param versionId the version's id
     * @return the function, always calling that version
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the version is unknown
     * @throws IllegalArgumentException                         when a column has no generic form
     */
    public static RemoteFunction fromVersionId(Channel channel, String versionId) {
        ExternalFunctionVersion version = version(channel, versionId);
        return pinned(channel, () -> channel, version, Codec.Generic.of(version));
    }

    /**
     * A function by its stable id, following its current version at each call (so a rollback takes effect at once).
     *
     * @param channel    the channel to the server
     * @param functionId the function's id
     * @param definition the function's local definition
     * @return the function
     */
    public static RemoteFunction fromFunctionId(Channel channel, String functionId, FunctionDefinition definition) {
        return following(channel, () -> channel, new Codec.Typed(definition), function(channel, functionId));
    }

    /**
     * A deployed function by name, pinned to the version that is current now, whose results come back as
     * {@code resultType}: {@code long total = RemoteFunction.fromName(client, "sum", Long.class).call(2L, 40L)}.
     *
     * @param client     the client
     * @param name       the deployed name
     * @param resultType the type results come back as (a primitive class stands for its box)
     * @param <R>        the result type
     * @return the typed function
     * @throws ai.chalk.compute.error.FunctionNotFoundException when no function has that name
     */
    public static <R> TypedFunction<R> fromName(SandboxClient client, String name, Class<R> resultType) {
        return fromName(client, name).as(resultType);
    }

    /**
     * The function of an immutable version, without a local definition: arguments and results take the generic Java
     * form of the version's schemas. Queued calls go to the client's queued-call endpoint.
     *
     * @param client    the client
     * @param versionId the version's id
     * @return the function, always calling that version
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the version is unknown
     */
    public static RemoteFunction fromVersionId(SandboxClient client, String versionId) {
        ExternalFunctionVersion version = version(client.channel(), versionId);
        return pinned(client.channel(), client::queuedCallChannel, version, Codec.Generic.of(version));
    }

    /**
     * The function of an immutable version, with its local definition for its argument and result types.
     *
     * @param client     the client
     * @param versionId  the version's id
     * @param definition the function's local definition
     * @return the function, always calling that version
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the version is unknown
     */
    public static RemoteFunction fromVersionId(SandboxClient client, String versionId, FunctionDefinition definition) {
        ExternalFunctionVersion version = version(client.channel(), versionId);
        return pinned(client.channel(), client::queuedCallChannel, version, new Codec.Typed(definition));
    }

    /**
     * A function by its stable id, following its current version at each call (so a rollback takes effect at once),
     * without a local definition: arguments and results take the generic Java form of the schemas of the version
     * current now.
     *
     * @param client     the client
     * @param functionId the function's id
     * @return the function
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     */
    public static RemoteFunction fromFunctionId(SandboxClient client, String functionId) {
        ExternalFunction function = function(client.channel(), functionId);
        return following(
                client.channel(), client::queuedCallChannel, Codec.Generic.of(function.getCurrentVersion()), function);
    }

    /**
     * A function by its stable id, following its current version at each call, with its local definition.
     *
     * @param client     the client
     * @param functionId the function's id
     * @param definition the function's local definition
     * @return the function
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     */
    public static RemoteFunction fromFunctionId(
            SandboxClient client, String functionId, FunctionDefinition definition) {
        return following(
                client.channel(),
                client::queuedCallChannel,
                new Codec.Typed(definition),
                function(client.channel(), functionId));
    }

    /**
     * A function by its stable id over a channel, following its current version, without a local definition; see
     * {@link #fromFunctionId(SandboxClient, String)}.
     *
     * @param channel    the channel to the server
     * @param functionId the function's id
     * @return the function
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     */
    public static RemoteFunction fromFunctionId(Channel channel, String functionId) {
        ExternalFunction function = function(channel, functionId);
        return following(channel, () -> channel, Codec.Generic.of(function.getCurrentVersion()), function);
    }

    private static ExternalFunction function(Channel channel, String functionId) {
        return ServerCall.run(
                        ResourceKind.FUNCTION,
                        () -> catalog(channel)
                                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                        .setFunctionId(functionId)
                                        .build()))
                .getExternalFunction();
    }

    private static RemoteFunction following(
            Channel channel, Supplier<Channel> queue, Codec codec, ExternalFunction function) {
        return new RemoteFunction(
                channel,
                queue,
                codec,
                ExternalFunctionVersionKey.newBuilder()
                        .setFunctionId(function.getId())
                        .build(),
                Optional.empty(),
                function.getName());
    }

    /**
     * This function with its results converted to {@code resultType}; see {@link TypedFunction}.
     *
     * @param resultType the type results come back as (a primitive class stands for its box)
     * @param <R>        the result type
     * @return the typed view
     */
    public <R> TypedFunction<R> as(Class<R> resultType) {
        return new TypedFunction<>(this, resultType);
    }

    private static ExternalFunctionVersion currentVersion(Channel channel, String name) {
        return ServerCall.run(
                        ResourceKind.FUNCTION,
                        () -> catalog(channel)
                                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                        .setFunctionName(name)
                                        .build()))
                .getExternalFunction()
                .getCurrentVersion();
    }

    private static ExternalFunctionVersion version(Channel channel, String versionId) {
        return ServerCall.run(
                        ResourceKind.FUNCTION,
                        () -> catalog(channel)
                                .getExternalFunctionVersion(GetExternalFunctionVersionRequest.newBuilder()
                                        .setId(versionId)
                                        .build()))
                .getExternalFunctionVersion();
    }

    private static RemoteFunction pinned(
            Channel channel, Supplier<Channel> queue, ExternalFunctionVersion version, Codec codec) {
        return new RemoteFunction(
                channel,
                queue,
                codec,
                ExternalFunctionVersionKey.newBuilder()
                        .setFunctionId(version.getFunctionId())
                        .setVersion(version.getVersion())
                        .build(),
                Optional.of(version.getId()),
                version.getFunctionName());
    }

    /** The function's deployed name. */
    public String name() {
        return functionName;
    }

    /**
     * Every version of the function, oldest first, with the current one marked.
     *
     * @return its versions
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function no longer exists
     */
    public List<FunctionVersion> versions() {
        return catalogOnly().versions(functionName);
    }

    /**
     * Makes a version of this function current again. A function attached by name or version id keeps calling the
     * version it was pinned to; one attached with {@link #fromFunctionId} follows the rollback at once.
     *
     * @param versionId the version's id
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the version is unknown
     */
    public void rollback(String versionId) {
        catalogOnly().rollback(key.getFunctionId(), versionId);
    }

    /** Deletes the function and all its versions. */
    public void delete() {
        catalogOnly().delete(functionName);
    }

    private FunctionVersions catalogOnly() {
        return new FunctionVersions(channel);
    }

    /** The version it calls, when pinned to one; empty when it follows the current version. */
    public Optional<String> versionId() {
        return versionId;
    }

    /**
     * Calls the function once. Parameters with a default ({@code @Default}, published in the catalog's schema) may
     * be left out at the end: {@code call("text")} for {@code score(String text, @Default("0.5") double threshold)}.
     *
     * @param arguments one value per parameter, in order; trailing parameters with defaults may be left out
     * @return the result, of the declared return type
     * @throws RemoteExecutionException  when the function threw, or its worker died during the call
     * @throws ChalkComputeException when the call could not be made
     */
    public Object call(Object... arguments) {
        List<Object> answers = codec.decode(
                send(codec.encode(List.<Object[]>of(arguments == null ? new Object[] {null} : arguments))), results);
        if (answers.size() != 1) {
            throw new ChalkComputeException(
                    Status.Code.INTERNAL, functionName + " returned " + answers.size() + " results for one call");
        }
        return answers.get(0);
    }

    /**
     * Calls the function for several sets of arguments in one request, one row each.
     *
     * @param calls one array of arguments per call; trailing parameters with defaults may be left out
     * @return one result per call, in order
     * @throws RemoteExecutionException  when the function threw on any row
     * @throws ChalkComputeException when the call could not be made
     */
    public List<Object> callBatch(List<Object[]> calls) {
        return codec.decode(send(codec.encode(calls)), results);
    }

    /**
     * Queues a call and polls for its result. Attached through a {@link SandboxClient}, the call goes to the
     * client's {@linkplain SandboxClient#queuedCallChannel() queued-call endpoint} ({@code CHALK_GRPC_ENGINE}, or the
     * environment's engine); attached over a channel, to that channel.
     *
     * @param arguments one value per parameter; trailing parameters with defaults may be left out
     * @return the result, or a {@link RemoteExecutionException} once the call failed
     */
    public CompletableFuture<Object> callAsync(Object... arguments) {
        byte[] payload = codec.encode(List.<Object[]>of(arguments == null ? new Object[] {null} : arguments));
        CompletableFuture<Object> result = new CompletableFuture<>();
        String callId;
        Channel queued;
        try {
            queued = queue.get();
            callId = catalog(queued)
                    .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                            .setFunction(key)
                            .setEnqueueRemoteCallRequest(EnqueueRemoteCallRequest.newBuilder()
                                    .setName(functionName)
                                    .setArgs(RemoteCallArgs.newBuilder().setFeatherBytes(ByteString.copyFrom(payload))))
                            .build())
                    .getEnqueueRemoteCallResponse()
                    .getCallId();
        } catch (StatusRuntimeException e) {
            result.completeExceptionally(
                    ServerCall.failure(ResourceKind.FUNCTION, RemoteExecutionException.fromCall(e)));
            return result;
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
            return result;
        }
        poll(queued, callId, result, Duration.ofMillis(50));
        return result;
    }

    /**
     * Polls the queued call after {@code delay}, then again with the delay doubled up to a second until it ended. The
     * poll is sent from the JDK's own timer and answered on the channel's executor, so no thread of the SDK waits.
     */
    private void poll(Channel queued, String callId, CompletableFuture<Object> result, Duration delay) {
        CompletableFuture.delayedExecutor(delay.toMillis(), TimeUnit.MILLISECONDS, Runnable::run)
                .execute(() -> {
                    if (result.isDone()) {
                        return;
                    }
                    AsyncRemoteCallServiceGrpc.newStub(queued)
                            .withMaxInboundMessageSize(MAX_RESULT_BYTES)
                            .withDeadlineAfter(30, TimeUnit.SECONDS)
                            .pollRemoteCall(
                                    PollRemoteCallRequest.newBuilder()
                                            .setCallId(callId)
                                            .build(),
                                    new StreamObserver<>() {
                                        @Override
                                        public void onNext(PollRemoteCallResponse response) {
                                            answered(queued, callId, result, delay, response);
                                        }

                                        @Override
                                        public void onError(Throwable t) {
                                            result.completeExceptionally(
                                                    t instanceof StatusRuntimeException e
                                                            ? ServerCall.failure(
                                                                    ResourceKind.FUNCTION_CALL,
                                                                    RemoteExecutionException.fromCall(e))
                                                            : t);
                                        }

                                        @Override
                                        public void onCompleted() {}
                                    });
                });
    }

    private void answered(
            Channel queued,
            String callId,
            CompletableFuture<Object> result,
            Duration delay,
            PollRemoteCallResponse response) {
        try {
            switch (response.getStatus()) {
                case REMOTE_CALL_STATUS_COMPLETED ->
                    result.complete(codec.decode(
                                    response.getResults(0).getFeatherStream().toByteArray(), results)
                            .get(0));
                case REMOTE_CALL_STATUS_FAILED ->
                    result.completeExceptionally(
                            response.getErrorsCount() == 0
                                    ? new RemoteExecutionException(
                                            Status.Code.UNKNOWN,
                                            "call " + callId + " failed",
                                            "",
                                            "",
                                            "",
                                            "",
                                            callId,
                                            null,
                                            null)
                                    : RemoteExecutionException.of(
                                            Status.Code.UNKNOWN, "", response.getErrors(0), callId, null, null));
                default ->
                    poll(
                            queued,
                            callId,
                            result,
                            delay.multipliedBy(2).compareTo(Duration.ofSeconds(1)) > 0
                                    ? Duration.ofSeconds(1)
                                    : delay.multipliedBy(2));
            }
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
    }

    private byte[] send(byte[] payload) {
        try {
            return catalog.callExternalFunction(CallExternalFunctionRequest.newBuilder()
                            .setFunction(key)
                            .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                    .setName(functionName)
                                    // encoded for this request and never written again: no copy
                                    .setFeatherStream(UnsafeByteOperations.unsafeWrap(payload)))
                            .build())
                    .getRemoteCallResponse()
                    .getFeatherStream()
                    .toByteArray();
        } catch (StatusRuntimeException e) {
            throw ServerCall.failure(ResourceKind.FUNCTION, RemoteExecutionException.fromCall(e));
        }
    }

    private static ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog(
            Channel channel) {
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(Objects.requireNonNull(channel, "channel"))
                .withMaxInboundMessageSize(MAX_RESULT_BYTES);
    }

    @Override
    public String toString() {
        return "RemoteFunction[" + functionName + versionId.map(v -> " @" + v).orElse("") + "]";
    }
}
