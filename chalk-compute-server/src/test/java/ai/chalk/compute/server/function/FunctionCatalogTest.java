package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.proto.common.v1.ChalkError;
import ai.chalk.compute.proto.common.v1.ErrorCode;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ConcurrencyPolicy;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionTraffic;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionTrafficTarget;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionSourceRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.RateLimitPolicy;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.RetryPolicy;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.UpdateExternalFunctionRequest;
import ai.chalk.compute.proto.function.v1.FunctionLogServiceGrpc;
import ai.chalk.compute.proto.function.v1.GetFunctionLogsRequest;
import ai.chalk.compute.proto.runtime.v1.AsyncRemoteCallServiceGrpc;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.EnqueueRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallResponse;
import ai.chalk.compute.proto.runtime.v1.PurgeQueueRequest;
import ai.chalk.compute.proto.runtime.v1.PurgeQueueResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallArgs;
import ai.chalk.compute.proto.runtime.v1.RemoteCallStatus;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupRevisionsRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.UnreadCalls;
import ai.chalk.compute.server.auth.Caller;
import com.google.protobuf.ByteString;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Deploying and calling functions over TCP against a real server whose replicas are real sandboxes running
 * {@link TestFunctionWorker} JVMs, launched as the protocol says from code uploaded as blobs.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FunctionCatalogTest {

    private static final String FUNCTIONS =
            "echo=t.W#echo,fail=t.W#fail,crash=t.W#crash,slow=t.W#slow," + "probe=t.W#probe,big=t.W#big";
    private static final Metadata.Key<String> CALL_ID =
            Metadata.Key.of("chalk-call-id", Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<ChalkError> ERROR =
            Metadata.Key.of("chalk-error-bin", ProtoUtils.metadataMarshaller(ChalkError.getDefaultInstance()));

    @TempDir
    static Path dir;

    private RunningServer server;

    @BeforeAll
    void start() throws Exception {
        // the calls' arguments: 8 MiB, an environment 4 MiB (callsWaitingForAReplicaHoldABoundedNumberOfBytes); answers
        // not read yet: 20 MiB, all of it an environment's (unreadAnswersAreHeldAgainstABudgetUntilTheirCallsEnd)
        server = RunningServer.start(
                dir,
                b -> b.workerReadyTimeout(Duration.ofSeconds(30))
                        .functionCallsBudget(8L << 20)
                        .unsentAnswersBudget(20L << 20));
    }

    @AfterAll
    void stop() {
        server.channel.shutdownNow();
        server.server.close();
    }

    private ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog() {
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(server.channel)
                .withDeadlineAfter(90, TimeUnit.SECONDS);
    }

    private static CreateExternalFunctionVersionRequest request(String name, TestCode code, int max) {
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName(name)
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(ChalkContainerSpec.newBuilder().putEnvVars("GREETING", "hello"))
                        .setScalingSpec(ScalingSpec.newBuilder()
                                .setMinReplicas(0)
                                .setMaxReplicas(max)
                                .setShutdownDelaySeconds(60)))
                .setConfig(FunctionConfig.newBuilder()
                        .putOptions("chalk_compute.code", code.manifestDigest)
                        .putOptions("chalk_compute.functions", FUNCTIONS)
                        .putOptions("chalk_compute.worker", "plain"))
                .build();
    }

    private String echo(String function, String payload) {
        return call(
                ExternalFunctionVersionKey.newBuilder()
                        .setFunctionName(function)
                        .build(),
                "echo",
                payload);
    }

    private String call(ExternalFunctionVersionKey key, String name, String payload) {
        return catalog()
                .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(key)
                        .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                .setName(name)
                                .setFeatherStream(ByteString.copyFromUtf8(payload)))
                        .build())
                .getRemoteCallResponse()
                .getFeatherStream()
                .toStringUtf8();
    }

    private long revisions(String group) {
        return ScalingGroupManagerServiceGrpc.newBlockingStub(server.channel)
                .listScalingGroupRevisions(ListScalingGroupRevisionsRequest.newBuilder()
                        .setScalingGroupName(group)
                        .build())
                .getRevisionsCount();
    }

    @Test
    void ensureReusesRefusesMissingCodeVersionsAndRollsBack() throws Exception {
        TestCode one = new TestCode("one");
        CreateExternalFunctionVersionRequest r1 = request("greeter", one, 2);
        assertThatThrownBy(() -> catalog().createExternalFunctionVersion(r1))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                    assertThat(e.getStatus().getDescription()).isEqualTo("missing code blobs: " + one.manifestDigest);
                });
        assertThat(one.upload(server.channel)).isPositive(); // the jars may be there already (other tests)
        CreateExternalFunctionVersionResponse v1 = catalog().createExternalFunctionVersion(r1);
        assertThat(v1.getExternalFunctionVersion().getVersion()).isEqualTo(1);
        assertThat(v1.getScalingGroup().getName()).isEqualTo("greeter");

        CreateExternalFunctionVersionResponse again = catalog().createExternalFunctionVersion(r1);
        assertThat(again.getExternalFunctionVersion().getId())
                .isEqualTo(v1.getExternalFunctionVersion().getId());
        assertThat(revisions("greeter")).isEqualTo(1);

        long t0 = System.nanoTime();
        assertThat(echo("greeter", "hi")).startsWith("one|fnw-").endsWith("|hi");
        System.out.printf("first call (replica start) took %d ms%n", (System.nanoTime() - t0) / 1_000_000);
        t0 = System.nanoTime();
        assertThat(echo("greeter", "again")).startsWith("one|").endsWith("|again");
        System.out.printf("warm call took %d ms%n", (System.nanoTime() - t0) / 1_000_000);

        TestCode two = new TestCode("two");
        CreateExternalFunctionVersionRequest r2 = request("greeter", two, 2);
        String answerTwo = two.blobs.keySet().iterator().next();
        assertThatThrownBy(() -> catalog().createExternalFunctionVersion(r2))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                    assertThat(e.getStatus().getDescription()).isEqualTo("missing code blobs: " + two.manifestDigest);
                });
        assertThat(two.upload(server.channel)).isEqualTo(2); // its manifest and its answer entry; the jars are there
        assertThat(answerTwo).isNotIn(one.blobs.keySet());
        CreateExternalFunctionVersionResponse v2 = catalog().createExternalFunctionVersion(r2);
        assertThat(v2.getExternalFunctionVersion().getVersion()).isEqualTo(2);
        assertThat(revisions("greeter")).isEqualTo(2);
        assertThat(echo("greeter", "x")).startsWith("two|");

        var rolledBack = catalog()
                .updateExternalFunction(UpdateExternalFunctionRequest.newBuilder()
                        .setExternalFunctionId(v1.getExternalFunctionVersion().getFunctionId())
                        .setTraffic(ExternalFunctionTraffic.newBuilder()
                                .addTargets(ExternalFunctionTrafficTarget.newBuilder()
                                        .setExternalFunctionVersionId(
                                                v1.getExternalFunctionVersion().getId())
                                        .setPercent(100)))
                        .build())
                .getExternalFunction();
        assertThat(rolledBack.getCurrentVersion().getVersion()).isEqualTo(1);
        assertThat(echo("greeter", "y")).startsWith("one|");
        assertThat(call(
                        ExternalFunctionVersionKey.newBuilder()
                                .setFunctionName("greeter")
                                .setVersion(2)
                                .build(),
                        "echo",
                        "z"))
                .startsWith("two|");
        String probe = call(
                ExternalFunctionVersionKey.newBuilder()
                        .setFunctionName("greeter")
                        .build(),
                "probe",
                "");
        assertThat(probe).contains("code-read-only;GREETING=hello;id=fnw-", ";functions=" + FUNCTIONS);
        var group = catalog()
                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                        .setFunctionName("greeter")
                        .setIncludeScalingGroup(true)
                        .build())
                .getScalingGroup();
        assertThat(group.getRevisionId())
                .isEqualTo(v1.getExternalFunctionVersion().getScalingGroupRevisionId());
        assertThat(revisions("greeter")).isEqualTo(2);

        var source = catalog()
                .getExternalFunctionVersionSource(GetExternalFunctionVersionSourceRequest.newBuilder()
                        .setFunctionVersionId(v2.getExternalFunctionVersion().getId())
                        .build());
        assertThat(source.getVolumeName()).isEqualTo("blobs");
        assertThat(source.getPrimaryPath()).isEqualTo("t.W#echo");
        assertThat(source.getSourceFilesList().get(0).getPath()).isEqualTo("000-answer.zip");
        assertThat(source.getSourceFilesCount()).isEqualTo(two.blobs.size() - 1);

        var listed = catalog()
                .listExternalFunctions(ListExternalFunctionsRequest.newBuilder()
                        .setSearch("reete")
                        .setLimit(1)
                        .build());
        assertThat(listed.getFunctionsList())
                .extracting(f -> f.getName() + " v" + f.getCurrentVersion() + "/" + f.getLatestVersion())
                .containsExactly("greeter v1/2");
        assertThat(listed.hasNextCursor()).isFalse();
        assertThat(catalog()
                        .listExternalFunctionVersions(ListExternalFunctionVersionsRequest.newBuilder()
                                .setFunctionName("greeter")
                                .setLimit(1)
                                .build())
                        .getNextCursor())
                .isNotEmpty();
    }

    @Test
    void failuresAreForwardedAndDeadWorkersReplaced() throws Exception {
        TestCode code = new TestCode("f");
        code.upload(server.channel);
        catalog().createExternalFunctionVersion(request("failing", code, 1));
        assertThat(echo("failing", "warm")).startsWith("f|");

        ExternalFunctionVersionKey key = ExternalFunctionVersionKey.newBuilder()
                .setFunctionName("failing")
                .build();
        assertThatThrownBy(() -> call(key, "fail", "bad input"))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN);
                    assertThat(e.getStatus().getDescription()).isEqualTo("boom: bad input");
                    assertThat(e.getTrailers().get(CALL_ID)).startsWith("call-");
                    ChalkError error = e.getTrailers().get(ERROR);
                    assertThat(error.getCode()).isEqualTo(ErrorCode.ERROR_CODE_RESOLVER_FAILED);
                    assertThat(error.getException().getKind()).isEqualTo("java.lang.IllegalStateException");
                });
        String before = echo("failing", "still");
        assertThat(before).startsWith("f|").endsWith("|still");

        assertThatThrownBy(() -> call(key, "crash", "")).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            String callId = e.getTrailers().get(CALL_ID);
            assertThat(e.getStatus().getDescription())
                    .contains("worker fnw-", "exited (exit code 3)", "during call " + callId);
        });
        String after = echo("failing", "replaced");
        assertThat(after).startsWith("f|").endsWith("|replaced");
        assertThat(after.split("\\|")[1]).isNotEqualTo(before.split("\\|")[1]);

        assertThatThrownBy(() -> call(key, "nosuch", ""))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));

        var impatient = request("failing", code, 1).toBuilder();
        impatient.getConfigBuilder().putOptions("chalk_compute.timeout", "PT0.5S");
        assertThat(catalog()
                        .createExternalFunctionVersion(impatient.build())
                        .getExternalFunctionVersion()
                        .getVersion())
                .isEqualTo(2);
        assertThat(call(key, "slow", "1")).startsWith("f|");
        assertThatThrownBy(() -> call(key, "slow", "3000")).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
            assertThat(e.getTrailers().get(CALL_ID)).startsWith("call-");
        });
    }

    @Test
    void scalesUpUnderConcurrentCallsWithinMax() throws Exception {
        TestCode code = new TestCode("s");
        code.upload(server.channel);
        var busy = request("busy", code, 2).toBuilder();
        busy.getSpecBuilder().getScalingSpecBuilder().setShutdownDelaySeconds(6);
        catalog().createExternalFunctionVersion(busy.build());
        ExternalFunctionVersionKey key =
                ExternalFunctionVersionKey.newBuilder().setFunctionName("busy").build();
        assertThat(call(key, "slow", "1")).startsWith("s|");
        List<CompletableFuture<String>> calls = IntStream.range(0, 4)
                .mapToObj(i -> CompletableFuture.supplyAsync(() -> call(key, "slow", "1500")))
                .toList();
        Set<String> workers = calls.stream()
                .map(CompletableFuture::join)
                .map(s -> s.split("\\|")[1])
                .collect(Collectors.toSet());
        assertThat(workers).hasSize(2);
        var group = catalog()
                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                        .setFunctionName("busy")
                        .setIncludeScalingGroup(true)
                        .build())
                .getScalingGroup();
        assertThat(group.getReadyReplicas()).isEqualTo(2);
        assertThat(group.getStatus()).isEqualTo("ready");
        // min_replicas 0, shutdown_delay_seconds 6: both stop once idle
        await().atMost(Duration.ofSeconds(25))
                .until(() -> catalog()
                                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                        .setFunctionName("busy")
                                        .setIncludeScalingGroup(true)
                                        .build())
                                .getScalingGroup()
                                .getReadyReplicas()
                        == 0);
    }

    /**
     * Code that exits as soon as it serves had the server start one JVM after another, without a pause, for as long as
     * the revision served, and log each death. Now the first young death is replaced at once and each further one in
     * a row waits twice as long (1 s, 2 s, 4 s...), and the group says so.
     */
    @Test
    void replicasThatKeepDyingYoungAreStartedAgainLessAndLessOften() throws Exception {
        TestCode code = new TestCode("y");
        code.upload(server.channel);
        var dying = request("dying-young", code, 1).toBuilder();
        dying.getSpecBuilder().getContainerSpecBuilder().putEnvVars("TEST_WORKER_EXIT_AFTER_MS", "200");
        dying.getSpecBuilder().getScalingSpecBuilder().setMinReplicas(1);
        // its workers' lines come back by the name they serve
        dying.getConfigBuilder().putOptions("chalk_compute.functions", "dying-young=t.W#echo");
        catalog().createExternalFunctionVersion(dying.build());
        try {
            await().atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> starts("dying-young").size() >= 4);
            List<Instant> starts = starts("dying-young");
            // the third death in a row waits 2 s before the fourth start (without the wait: a sandbox and a JVM)
            assertThat(Duration.between(starts.get(2), starts.get(3))).isGreaterThanOrEqualTo(Duration.ofSeconds(2));
            // between a replica's start and its death the group is ready, without a message
            await().atMost(Duration.ofSeconds(30))
                    .untilAsserted(() -> assertThat(catalog()
                                    .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                            .setFunctionName("dying-young")
                                            .setIncludeScalingGroup(true)
                                            .build())
                                    .getScalingGroup()
                                    .getStatusMessage())
                            .contains("exited", "in a row died within 60 s of their start: the next starts in"));
        } finally {
            catalog()
                    .deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                            .setFunctionName("dying-young")
                            .build());
        }
    }

    /** When each worker of the function printed its first line, in order. */
    private List<Instant> starts(String function) {
        return FunctionLogServiceGrpc.newBlockingStub(server.channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .getFunctionLogs(GetFunctionLogsRequest.newBuilder()
                        .setFunctionName(function)
                        .setLimit(100)
                        .build())
                .getLogsList()
                .stream()
                .filter(l -> l.getMessage().startsWith("test worker "))
                .map(l -> Instant.ofEpochSecond(
                        l.getTimestamp().getSeconds(), l.getTimestamp().getNanos()))
                .sorted()
                .toList();
    }

    @Test
    void aWorkerThatCannotStartFailsTheCallAndTheGroupSaysWhy() throws Exception {
        TestCode empty = new TestCode("empty", false);
        empty.upload(server.channel);
        catalog().createExternalFunctionVersion(request("broken", empty, 1));
        assertThatThrownBy(() -> echo("broken", "x")).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(e.getStatus().getDescription())
                    .contains(
                            "before it was serving",
                            "Could not find or load main class ai.chalk.compute.function.worker.FunctionWorker");
        });
        var group = catalog()
                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                        .setFunctionName("broken")
                        .setIncludeScalingGroup(true)
                        .build())
                .getScalingGroup();
        assertThat(group.getStatus()).isEqualTo("failed");
        assertThat(group.getStatusMessage()).contains("Could not find or load main class");
        assertThatThrownBy(() -> echo("never-deployed", "x")) // and the server keeps answering
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
    }

    @Test
    void concurrencyLimitsQueueCallsThatPurgeRemovesAndRetriesReplaceDeadWorkers() throws Exception {
        TestCode code = new TestCode("c");
        code.upload(server.channel);
        var limited = request("limited", code, 1).toBuilder();
        limited.getConfigBuilder()
                .setConcurrency(ConcurrencyPolicy.newBuilder().setMaxConcurrent(1))
                .setRetryPolicy(RetryPolicy.newBuilder().setMaxRetries(1).setInitialBackoffMs(10));
        catalog().createExternalFunctionVersion(limited.build());
        ExternalFunctionVersionKey key = ExternalFunctionVersionKey.newBuilder()
                .setFunctionName("limited")
                .build();
        String worker = call(key, "echo", "warm").split("\\|")[1];

        // one replica, one call at a time: two concurrent calls take turns on it
        long start = System.nanoTime();
        List<CompletableFuture<String>> both = IntStream.range(0, 2)
                .mapToObj(i -> CompletableFuture.supplyAsync(() -> call(key, "slow", "1000")))
                .toList();
        assertThat(both.stream().map(CompletableFuture::join).map(r -> r.split("\\|")[1]))
                .containsOnly(worker);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(2000));

        // queued calls wait PENDING behind a running one, and PurgeQueue removes them
        var async = AsyncRemoteCallServiceGrpc.newBlockingStub(server.channel);
        String running = enqueue(key, "slow", "3000");
        awaitStatus(async, running, RemoteCallStatus.REMOTE_CALL_STATUS_RUNNING, Duration.ofSeconds(10));
        String waiting = enqueue(key, "echo", "never");
        String alsoWaiting = enqueue(key, "echo", "never either");
        assertThat(async.pollRemoteCall(PollRemoteCallRequest.newBuilder()
                                .setCallId(waiting)
                                .build())
                        .getStatus())
                .isEqualTo(RemoteCallStatus.REMOTE_CALL_STATUS_PENDING);
        PurgeQueueResponse purged = async.purgeQueue(
                PurgeQueueRequest.newBuilder().setFunctionName("limited").build());
        assertThat(purged.getItemsRemovedByFunctionMap()).containsEntry("limited", 2L);
        for (String gone : List.of(waiting, alsoWaiting)) {
            assertThatThrownBy(() -> async.pollRemoteCall(
                            PollRemoteCallRequest.newBuilder().setCallId(gone).build()))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
        }
        awaitStatus(async, running, RemoteCallStatus.REMOTE_CALL_STATUS_COMPLETED, Duration.ofSeconds(30));

        // a worker dying under a call: tried again once on a new replica (which dies too, here)
        assertThatThrownBy(() -> call(key, "crash", "")).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(e.getStatus().getDescription()).contains("exited (exit code 3)", "(tried 2 times)");
        });
        // the function's own failure is its answer: not tried again
        assertThatThrownBy(() -> call(key, "fail", "once"))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN));
        assertThat(call(key, "echo", "after")).endsWith("|after");

        var bad = request("limited", code, 1).toBuilder();
        bad.getConfigBuilder().setRetryPolicy(RetryPolicy.newBuilder().setMaxRetries(-1));
        assertThatThrownBy(() -> catalog().createExternalFunctionVersion(bad.build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                    assertThat(e.getStatus().getDescription()).contains("config.retry_policy.max_retries");
                });
    }

    /**
     * A queued call waits on a server thread (for a replica with room) with its arguments: a tenant queueing calls
     * behind a busy replica had the server hold a thread for each, without bound. An environment now has at most half
     * of the server's {@value FunctionCalls#MAX_QUEUED} queued calls not finished; past that, RESOURCE_EXHAUSTED.
     */
    @Test
    void queuedCallsNotFinishedAreBoundedPerEnvironment() throws Exception {
        TestCode code = new TestCode("q");
        code.upload(server.channel);
        var one = request("one-at-a-time", code, 1).toBuilder();
        one.getConfigBuilder().setConcurrency(ConcurrencyPolicy.newBuilder().setMaxConcurrent(1));
        catalog().createExternalFunctionVersion(one.build());
        ExternalFunctionVersionKey key = ExternalFunctionVersionKey.newBuilder()
                .setFunctionName("one-at-a-time")
                .build();
        call(key, "echo", "warm");
        var async = AsyncRemoteCallServiceGrpc.newBlockingStub(server.channel);
        String running = enqueue(key, "slow", "15000");
        awaitStatus(async, running, RemoteCallStatus.REMOTE_CALL_STATUS_RUNNING, Duration.ofSeconds(10));
        for (int i = 1; i < FunctionCalls.MAX_QUEUED / 2; i++) {
            enqueue(key, "echo", "waits");
        }
        assertThatThrownBy(() -> enqueue(key, "echo", "one too many"))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                    assertThat(e.getStatus().getDescription())
                            .contains("this environment has 512 queued calls not finished yet");
                });
        async.purgeQueue(
                PurgeQueueRequest.newBuilder().setFunctionName("one-at-a-time").build());
        awaitStatus(async, running, RemoteCallStatus.REMOTE_CALL_STATUS_COMPLETED, Duration.ofSeconds(30));
        // the purged calls let go of their threads once the replica has room, and their places with them
        await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> {
            String again = enqueue(key, "echo", "again");
            return again.startsWith("call-");
        });
    }

    /** Waits until the queued call {@code callId} has {@code status}. */
    private static void awaitStatus(
            AsyncRemoteCallServiceGrpc.AsyncRemoteCallServiceBlockingStub async,
            String callId,
            RemoteCallStatus status,
            Duration atMost) {
        await().atMost(atMost)
                .until(() -> async.pollRemoteCall(PollRemoteCallRequest.newBuilder()
                                        .setCallId(callId)
                                        .build())
                                .getStatus()
                        == status);
    }

    private String enqueue(ExternalFunctionVersionKey key, String name, String payload) {
        return catalog()
                .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(key)
                        .setEnqueueRemoteCallRequest(EnqueueRemoteCallRequest.newBuilder()
                                .setName(name)
                                .setArgs(RemoteCallArgs.newBuilder().setFeatherBytes(ByteString.copyFromUtf8(payload))))
                        .build())
                .getEnqueueRemoteCallResponse()
                .getCallId();
    }

    @Test
    void callsWaitingForAReplicaHoldABoundedNumberOfBytes() throws Exception {
        TestCode code = new TestCode("b");
        code.upload(server.channel);
        var busy = request("busy", code, 1).toBuilder();
        busy.getConfigBuilder().setConcurrency(ConcurrencyPolicy.newBuilder().setMaxConcurrent(1));
        catalog().createExternalFunctionVersion(busy.build());
        ExternalFunctionVersionKey key =
                ExternalFunctionVersionKey.newBuilder().setFunctionName("busy").build();
        call(key, "echo", "warm");
        var async = AsyncRemoteCallServiceGrpc.newBlockingStub(server.channel);
        String running = enqueue(key, "slow", "4000");
        awaitStatus(async, running, RemoteCallStatus.REMOTE_CALL_STATUS_RUNNING, Duration.ofSeconds(10));
        // 3 MiB of arguments waits for the replica; 3 MiB more would pass the environment's 4 MiB (the answer fits the
        // test client's 4 MiB messages)
        String big = "x".repeat(3 << 20);
        CompletableFuture<String> waiting = CompletableFuture.supplyAsync(() -> call(key, "echo", big));
        Thread.sleep(500);
        assertThat(waiting).isNotDone();
        for (ThrowingCallable more :
                List.<ThrowingCallable>of(() -> call(key, "echo", big), () -> enqueue(key, "echo", big))) {
            assertThatThrownBy(more).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(e.getStatus().getDescription()).contains("hold too many bytes of arguments");
            });
        }
        assertThat(waiting.get(60, TimeUnit.SECONDS).endsWith("|" + big))
                .as("the waiting call's answer")
                .isTrue();
        awaitStatus(async, running, RemoteCallStatus.REMOTE_CALL_STATUS_COMPLETED, Duration.ofSeconds(30));
        // the bytes given back, the same call goes through
        assertThat(call(key, "echo", big).endsWith("|" + big))
                .as("the same call again")
                .isTrue();
    }

    /**
     * A client asks for large answers and never reads them: gRPC kept each one in the server, whole, for as long as
     * the call stayed open. Each is now held against a budget until its call ends; past the environment's share the
     * answer is not sent, and its call ends RESOURCE_EXHAUSTED saying why.
     */
    @Test
    void unreadAnswersAreHeldAgainstABudgetUntilTheirCallsEnd() throws Exception {
        TestCode code = new TestCode("u");
        code.upload(server.channel);
        catalog().createExternalFunctionVersion(request("answers", code, 1));
        ExternalFunctionVersionKey key = ExternalFunctionVersionKey.newBuilder()
                .setFunctionName("answers")
                .build();
        call(key, "echo", "warm");
        var answers = server.server.memoryBudgets().unsentAnswers();
        // 12 MiB: more than HTTP/2's largest window, so the server cannot send it all to a client that does not read
        ClientCall<CallExternalFunctionRequest, CallExternalFunctionResponse> unread =
                unreadBig(server.channel, key, 12 << 10, new CompletableFuture<>());
        try {
            await().atMost(Duration.ofSeconds(30)).until(() -> answers.held(Caller.DEFAULT_ENVIRONMENT) > 12 << 20);

            // a second one would pass the 20 MiB: not sent; small answers still are
            assertThatThrownBy(() -> call(key, "big", "12288"))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                        assertThat(e.getStatus().getDescription())
                                .startsWith("the answer (")
                                .contains("the answers this environment's clients have not read yet hold too many"
                                        + " bytes: this environment holds ");
                    });
            assertThat(call(key, "echo", "small")).endsWith("|small");

            // a queued call's result that would not be sent is not forgotten either: it waits for a poll with room
            String queued = enqueue(key, "big", "12288");
            PollRemoteCallRequest poll =
                    PollRemoteCallRequest.newBuilder().setCallId(queued).build();
            var async = AsyncRemoteCallServiceGrpc.newBlockingStub(server.channel)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .withMaxInboundMessageSize(16 << 20);
            await().atMost(Duration.ofSeconds(30))
                    .untilAsserted(() -> assertThatThrownBy(() -> async.pollRemoteCall(poll))
                            .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                                assertThat(e.getStatus().getDescription()).contains("bytes) is not made: ");
                            }));
            unread.cancel("the test is done with it", null);
            await().atMost(Duration.ofSeconds(30)).until(() -> answers.held(Caller.DEFAULT_ENVIRONMENT) == 0);
            PollRemoteCallResponse result = async.pollRemoteCall(poll);
            assertThat(result.getStatus()).isEqualTo(RemoteCallStatus.REMOTE_CALL_STATUS_COMPLETED);
            assertThat(result.getResults(0).getFeatherStream().size()).isGreaterThan(12 << 20);
            assertThatThrownBy(() -> async.pollRemoteCall(poll))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
        } finally {
            unread.cancel("the test is done with it", null);
        }
        // a call that ends gives its bytes back, and one whose answer is read holds none once it is over
        await().atMost(Duration.ofSeconds(30)).until(() -> answers.held(Caller.DEFAULT_ENVIRONMENT) == 0);

        // answers under a MiB, which gRPC writes out only when the call closes, are held the same way (a 64 KiB window,
        // no tuning: the answers cannot all wait in the client)
        ManagedChannel tight = RunningServer.authenticated(
                server.server, Caller.DEFAULT_ENVIRONMENT, b -> b.flowControlWindow(64 << 10));
        List<ClientCall<?, ?>> small = new ArrayList<>();
        try {
            Status refused = UnreadCalls.startUntilOneEnds(
                    40,
                    () -> answers.held(Caller.DEFAULT_ENVIRONMENT),
                    closed -> unreadBig(tight, key, 768, closed),
                    small);
            assertThat(refused).as("an answer refused").isNotNull();
            assertThat(refused.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(small.size()).as("answers sent, then one refused").isBetween(20, 28);
        } finally {
            small.forEach(c -> c.cancel("the test is done with it", null));
            tight.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> answers.held(Caller.DEFAULT_ENVIRONMENT) == 0);
        assertThat(catalog()
                        .withMaxInboundMessageSize(16 << 20)
                        .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                                .setFunction(key)
                                .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                        .setName("big")
                                        .setFeatherStream(ByteString.copyFromUtf8("12288")))
                                .build())
                        .getRemoteCallResponse()
                        .getFeatherStream()
                        .size())
                .isGreaterThan(12 << 20);
        await().atMost(Duration.ofSeconds(30)).until(() -> answers.held(Caller.DEFAULT_ENVIRONMENT) == 0);
    }

    /** A call of {@code big} answering {@code kib} KiB, whose client asks for none of it; {@code closed} gets its end. */
    private static ClientCall<CallExternalFunctionRequest, CallExternalFunctionResponse> unreadBig(
            Channel channel, ExternalFunctionVersionKey key, int kib, CompletableFuture<Status> closed) {
        return UnreadCalls.start(
                channel,
                ExternalFunctionCatalogServiceGrpc.getCallExternalFunctionMethod(),
                CallOptions.DEFAULT.withMaxInboundMessageSize(16 << 20),
                CallExternalFunctionRequest.newBuilder()
                        .setFunction(key)
                        .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                .setName("big")
                                .setFeatherStream(ByteString.copyFromUtf8(Integer.toString(kib))))
                        .build(),
                closed);
    }

    @Test
    void queuedCallsArePolledUntilRead() throws Exception {
        TestCode code = new TestCode("q");
        code.upload(server.channel);
        var queued = request("queued", code, 1).toBuilder();
        queued.getConfigBuilder().putOptions("chalk_compute.functions", FUNCTIONS + ",queued=t.W#echo");
        catalog().createExternalFunctionVersion(queued.build());
        String callId = catalog()
                .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName("queued"))
                        .setEnqueueRemoteCallRequest(EnqueueRemoteCallRequest.newBuilder()
                                .setName("echo")
                                .setArgs(RemoteCallArgs.newBuilder().setFeatherBytes(ByteString.copyFromUtf8("later"))))
                        .build())
                .getEnqueueRemoteCallResponse()
                .getCallId();
        var async = AsyncRemoteCallServiceGrpc.newBlockingStub(server.channel);
        PollRemoteCallResponse poll;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        do {
            poll = async.pollRemoteCall(
                    PollRemoteCallRequest.newBuilder().setCallId(callId).build());
            Thread.sleep(100);
        } while (poll.getStatus() != RemoteCallStatus.REMOTE_CALL_STATUS_COMPLETED && System.nanoTime() < deadline);
        assertThat(poll.getStatus()).isEqualTo(RemoteCallStatus.REMOTE_CALL_STATUS_COMPLETED);
        assertThat(poll.getResults(0).getFeatherStream().toStringUtf8())
                .startsWith("q|")
                .endsWith("|later");
        assertThatThrownBy(() -> async.pollRemoteCall(
                        PollRemoteCallRequest.newBuilder().setCallId(callId).build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));

        // AsyncRemoteCallService directly: the name is the deployed function's (and the worker function's)
        String direct = async.enqueueRemoteCall(EnqueueRemoteCallRequest.newBuilder()
                        .setName("queued")
                        .setArgs(RemoteCallArgs.newBuilder().setFeatherBytes(ByteString.copyFromUtf8("direct")))
                        .build())
                .getCallId();
        awaitStatus(async, direct, RemoteCallStatus.REMOTE_CALL_STATUS_COMPLETED, Duration.ofSeconds(30));
        assertThatThrownBy(() -> async.enqueueRemoteCall(
                        EnqueueRemoteCallRequest.newBuilder().setName("queued").build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT));
    }

    @Test
    void badRequestsAreRefusedAndTheServerKeepsServing() throws Exception {
        TestCode code = new TestCode("bad");
        var scheduled = request("scheduled", code, 1).toBuilder();
        scheduled.getConfigBuilder().setSchedule("0 * * * *");
        assertThatThrownBy(() -> catalog().createExternalFunctionVersion(scheduled.build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                    assertThat(e.getStatus().getDescription()).contains("config.schedule");
                });
        var limited = request("rate-limited", code, 1).toBuilder();
        limited.getConfigBuilder().setRateLimit(RateLimitPolicy.newBuilder().setRate(10));
        assertThatThrownBy(() -> catalog().createExternalFunctionVersion(limited.build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                    assertThat(e.getStatus().getDescription()).contains("config.rate_limit");
                });
        var imaged = request("imaged", code, 1).toBuilder();
        imaged.getSpecBuilder().getContainerSpecBuilder().setImage("ubuntu:latest");
        assertThatThrownBy(() -> catalog().createExternalFunctionVersion(imaged.build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                    assertThat(e.getStatus().getDescription()).contains("container_spec.image", "leave image empty");
                });
        var badOption = request("badopt", code, 1).toBuilder();
        badOption.getConfigBuilder().putOptions("chalk_compute.functions", "not a function list");
        assertThatThrownBy(() -> catalog().createExternalFunctionVersion(badOption.build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                    assertThat(e.getStatus().getDescription()).contains("name=fully.qualified.Class#method");
                });
        var noCode = request("nocode", code, 1).toBuilder();
        noCode.getConfigBuilder().removeOptions("chalk_compute.code");
        assertThatThrownBy(() -> catalog().createExternalFunctionVersion(noCode.build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                    assertThat(e.getStatus().getDescription()).contains("chalk_compute.code");
                });
        assertThatThrownBy(() -> catalog()
                        .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                .setFunctionName("never-deployed")
                                .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
    }
}
