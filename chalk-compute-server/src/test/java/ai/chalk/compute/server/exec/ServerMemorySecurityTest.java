package ai.chalk.compute.server.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.sandbox.v1.ExecInit;
import ai.chalk.compute.proto.sandbox.v1.ExecRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.StdinData;
import ai.chalk.compute.proto.sandbox.v2.DetachSession;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.GetProcessStatus;
import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.proto.volume.v1.CreateVolumeRequest;
import ai.chalk.compute.proto.volume.v1.ListFilesRequest;
import ai.chalk.compute.proto.volume.v1.PutFileRequest;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.UnreadCalls;
import ai.chalk.compute.server.auth.Authentication;
import ai.chalk.compute.server.auth.BearerTokens;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.session.SessionRegistry;
import com.google.protobuf.ByteString;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An unauthenticated client tries to exhaust the server's heap: detached sessions by the dozen, large stdin
 * that the process never reads, many one-shot commands collecting output at once, oversized messages. Each is
 * bounded server-wide, refused past the bound with RESOURCE_EXHAUSTED saying what to do, and the server keeps
 * serving. Of session output, stdin and collected output one environment holds at most half: before, a tenant that
 * filled one refused every other environment's sessions, stdin or commands.
 */
class ServerMemorySecurityTest {

    private static final int MIB = 1 << 20;

    @Test
    void detachedSessionsAreCappedPerSandboxPerEnvironmentAndByTheServersBudget(@TempDir Path dataDir)
            throws Exception {
        try (RunningServer server =
                RunningServer.start(dataDir, b -> b.sessionBufferBytes(MIB).sessionOutputBudget(80L * MIB))) {
            ByteBudget budget = server.server.memoryBudgets().sessionOutput().budget();
            String a = server.createSandbox();
            for (int i = 0; i < SessionRegistry.MAX_RUNNING; i++) {
                assertThat(openDetached(server.processesAsync(), a).getCode()).isEqualTo(Status.Code.OK);
            }
            Status perSandbox = openDetached(server.processesAsync(), a);
            assertThat(perSandbox.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(perSandbox.getDescription())
                    .contains("already runs " + SessionRegistry.MAX_RUNNING + " sessions");

            String b = server.createSandbox();
            for (int i = 0; i < 8; i++) {
                assertThat(openDetached(server.processesAsync(), b).getCode()).isEqualTo(Status.Code.OK);
            }
            Status environmentShare = openDetached(server.processesAsync(), b);
            assertThat(environmentShare.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(environmentShare.getDescription())
                    .contains("this environment holds " + 40L * MIB + " of the " + 40L * MIB)
                    .contains("one environment may hold, of the server's " + 80L * MIB);
            assertThat(budget.used()).isEqualTo(40L * MIB);

            // the other half is the other environments'
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                String c = RunningServer.createSandbox(prod);
                assertThat(openDetached(SandboxProcessServiceGrpc.newStub(prod), c)
                                .getCode())
                        .isEqualTo(Status.Code.OK);
                assertThat(budget.used()).isEqualTo(41L * MIB);

                // the server keeps serving, and terminating a sandbox gives its sessions' room back
                assertThat(echo(server, b)).isEqualTo("still serving\n");
                server.terminate(a);
                assertThat(budget.used()).isEqualTo(9L * MIB);
                assertThat(openDetached(server.processesAsync(), b).getCode()).isEqualTo(Status.Code.OK);
                server.terminate(b);
                assertThat(budget.used()).isEqualTo(MIB);
                SandboxServiceGrpc.newBlockingStub(prod)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .terminateSandbox(
                                TerminateSandboxRequest.newBuilder().setId(c).build());
                assertThat(budget.used()).isZero();
            } finally {
                prod.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void stdinThatNoProcessReadsIsBoundedServerWide(@TempDir Path dataDir) throws Exception {
        long budgetBytes = 64L * MIB;
        // the stdin budget alone: 40 messages of 30 MB at once also go past the budget for messages being received,
        // which refuses them earlier (largeMessagesBeingReceivedShareOneBudget)
        try (RunningServer server =
                RunningServer.start(dataDir, b -> b.stdinBudget(budgetBytes).receivedMessagesBudget(Long.MAX_VALUE))) {
            ByteBudget budget = server.server.memoryBudgets().stdin().budget();
            String id = server.createSandbox();
            ByteString thirtyMegabytes = ByteString.copyFrom(new byte[30_000_000]);
            long heapBefore = heapAfterGc();

            // v1 Exec: a process that never reads, and one 30 MB stdin message, from 20 clients
            List<CompletableFuture<Status>> execs = new ArrayList<>();
            List<ClientCallStreamObserver<ExecRequest>> calls = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                CompletableFuture<Status> done = new CompletableFuture<>();
                CompletableFuture<ClientCallStreamObserver<ExecRequest>> call = new CompletableFuture<>();
                StreamObserver<ExecRequest> requests = server.sandboxesAsync()
                        .exec(new ClientResponseObserver<ExecRequest, ExecResponse>() {
                            @Override
                            public void beforeStart(ClientCallStreamObserver<ExecRequest> requestStream) {
                                call.complete(requestStream);
                            }

                            @Override
                            public void onNext(ExecResponse r) {}

                            @Override
                            public void onError(Throwable t) {
                                done.complete(Status.fromThrowable(t));
                            }

                            @Override
                            public void onCompleted() {
                                done.complete(Status.OK);
                            }
                        });
                requests.onNext(ExecRequest.newBuilder()
                        .setInit(ExecInit.newBuilder()
                                .setSandboxId(id)
                                .setCommand("sleep")
                                .addArgs("600"))
                        .build());
                requests.onNext(ExecRequest.newBuilder()
                        .setStdinData(StdinData.newBuilder().setData(thirtyMegabytes))
                        .build());
                execs.add(done);
                calls.add(call.get());
            }
            // v2 ExecCommand: the same with stdin in the request, from 20 more
            List<CompletableFuture<Status>> commands = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                CompletableFuture<Status> done = new CompletableFuture<>();
                server.processesAsync()
                        .withDeadlineAfter(120, TimeUnit.SECONDS)
                        .execCommand(
                                ExecCommandRequest.newBuilder()
                                        .setSandboxId(id)
                                        .setCommand("sleep")
                                        .addArgs("600")
                                        .setStdin(thirtyMegabytes)
                                        .build(),
                                statusOf(done));
                commands.add(done);
            }
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() ->
                            execs.stream().filter(CompletableFuture::isDone).count() >= 18
                                    && commands.stream()
                                                    .filter(CompletableFuture::isDone)
                                                    .count()
                                            >= 18);
            for (CompletableFuture<Status> refused : concat(execs, commands)) {
                if (refused.isDone()) {
                    Status s = refused.get();
                    assertThat(s.getCode()).as("%s", s).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                    assertThat(s.getDescription())
                            .contains("bytes of stdin refused")
                            .contains("one environment may hold, of the server's " + budgetBytes)
                            .contains("in pieces");
                }
            }
            assertThat(budget.used())
                    .as("one environment's share: half the budget, or one largest message")
                    .isLessThanOrEqualTo(server.server.memoryBudgets().stdin().share());
            long retained = heapAfterGc() - heapBefore;
            System.err.printf(
                    "40 calls with 30 MB of unread stdin each: %d refused, %d MiB of stdin held, heap grew %d MiB%n",
                    concat(execs, commands).stream()
                            .filter(CompletableFuture::isDone)
                            .count(),
                    budget.used() / MIB,
                    retained / MIB);
            assertThat(retained)
                    .as("heap retained by 40 calls of 30 MB unread stdin")
                    .isLessThan(budgetBytes + 96L * MIB);

            assertThat(echo(server, id)).isEqualTo("still serving\n");
            calls.forEach(c -> c.cancel("done", null));
            server.terminate(id);
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> budget.used() == 0);
        }
    }

    @Test
    void outputCollectedByConcurrentCommandsIsBoundedServerWide(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.collectedOutputBudget(20L * MIB))) {
            ByteBudget budget = server.server.memoryBudgets().collectedOutput().budget();
            String id = server.createSandbox();
            List<CompletableFuture<Status>> commands = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                CompletableFuture<Status> done = new CompletableFuture<>();
                server.processesAsync()
                        .withDeadlineAfter(120, TimeUnit.SECONDS)
                        .withMaxInboundMessageSize(64 * MIB)
                        .execCommand(
                                ExecCommandRequest.newBuilder()
                                        .setSandboxId(id)
                                        .setCommand("sh")
                                        .addArgs("-c")
                                        .addArgs("head -c 8388608 /dev/zero; sleep 3")
                                        .build(),
                                statusOf(done));
                commands.add(done);
            }
            List<Status> statuses = new ArrayList<>();
            for (CompletableFuture<Status> c : commands) {
                statuses.add(c.get(120, TimeUnit.SECONDS));
            }
            // 32 MiB of output wanted at once, 10 allowed (one environment's half of 20): whoever does not fit is
            // refused (each may have collected part of its output when the budget ran out), never more is held
            assertThat(statuses).filteredOn(s -> !s.isOk()).isNotEmpty().allSatisfy(s -> {
                assertThat(s.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(s.getDescription())
                        .contains("one environment may hold, of the server's " + 20L * MIB)
                        .contains("OpenSession");
            });
            assertThat(budget.used()).isZero();
            // once the others are done, the same command fits
            assertThat(zeros(server, id, 8 * MIB)).isEqualTo(8 * MIB);
            // the budget is given back before the answer: commands in a row, each holding more than half of the
            // environment's share, fit
            for (int i = 0; i < 10; i++) {
                assertThat(zeros(server, id, 6 * MIB))
                        .as("command %d in a row", i)
                        .isEqualTo(6 * MIB);
                assertThat(budget.used()).isZero();
            }
            assertThat(echo(server, id)).isEqualTo("still serving\n");
            server.terminate(id);
        }
    }

    /** Runs {@code head -c bytes /dev/zero} with ExecCommand and returns how many bytes of output came back. */
    private static int zeros(RunningServer server, String id, int bytes) {
        return server.processes()
                .withMaxInboundMessageSize(64 * MIB)
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(id)
                        .setCommand("head")
                        .addArgs("-c")
                        .addArgs(String.valueOf(bytes))
                        .addArgs("/dev/zero")
                        .build())
                .getStdout()
                .size();
    }

    @Test
    void aMessageLargerThanTheServerTakesIsRefusedNamingTheLimit(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            String id = server.createSandbox();
            StatusRuntimeException e = catchThrowableOfType(
                    StatusRuntimeException.class,
                    () -> server.processes()
                            .execCommand(ExecCommandRequest.newBuilder()
                                    .setSandboxId(id)
                                    .setCommand("true")
                                    .setStdin(ByteString.copyFrom(new byte[40 * MIB]))
                                    .build()));
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(e.getStatus().getDescription()).contains("maximum size " + ComputeServer.MAX_MESSAGE_BYTES);
            assertThat(echo(server, id)).isEqualTo("still serving\n");
            server.terminate(id);
        }
    }

    /**
     * A client asks for its session's status in a loop and reads none of the answers: each request was taken and
     * answered at once, and the answers queued in the server without end. The stream now takes the next request only
     * once the stream can take another answer, and what it has sent and not written is held against the budget of
     * unsent answers; once the client reads, every status it asked for comes.
     */
    @Test
    void statusRequestsWhoseAnswersNoOneReadsQueueABoundedAmount(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            String id = server.createSandbox();
            EnvironmentBytes unsent = server.server.memoryBudgets().unsentAnswers();
            AtomicInteger statuses = new AtomicInteger();
            // a 64 KiB window (no tuning): the server fills it with a few thousand answers, then keeps the rest
            ManagedChannel small = RunningServer.authenticated(
                    server.server, Caller.DEFAULT_ENVIRONMENT, b -> b.flowControlWindow(64 << 10));
            ClientCall<OpenSessionRequest, OpenSessionResponse> call =
                    small.newCall(SandboxProcessServiceGrpc.getOpenSessionMethod(), CallOptions.DEFAULT);
            call.start(
                    new ClientCall.Listener<>() {
                        @Override
                        public void onMessage(OpenSessionResponse response) {
                            if (response.hasProcessStatus()) {
                                statuses.incrementAndGet();
                            }
                        }
                    },
                    new Metadata()); // and asks for no answer
            try {
                call.sendMessage(OpenSessionRequest.newBuilder()
                        .setNewProcess(NewProcess.newBuilder()
                                .setSandboxId(id)
                                .setCommand("sleep")
                                .addArgs("600"))
                        .build());
                int asked = 60_000;
                OpenSessionRequest status = OpenSessionRequest.newBuilder()
                        .setGetProcessStatus(GetProcessStatus.getDefaultInstance())
                        .build();
                for (int i = 0; i < asked; i++) {
                    call.sendMessage(status);
                }
                long most = 0;
                for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(6);
                        System.nanoTime() < end && most < 64 << 10; ) {
                    most = Math.max(most, unsent.held(Caller.DEFAULT_ENVIRONMENT));
                    Thread.sleep(20);
                }
                assertThat(most).as("answers held unsent, at most").isLessThan(64 << 10);

                call.request(Integer.MAX_VALUE);
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> statuses.get() == asked);
                assertThat(echo(server, id)).isEqualTo("still serving\n");
            } finally {
                call.cancel("the test is done with it", null);
                small.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> unsent.held(Caller.DEFAULT_ENVIRONMENT) == 0);
        }
    }

    /**
     * Streams that ended with their last output unread (a command's output, a snippet's artifact) no longer counted
     * among the calls under way, and each kept what it had not sent in the server: any number of them held any amount.
     * What a stream has sent and not written is now held against the budget of unsent answers until the client reads
     * or the call ends, and an environment holding its share is refused new streams.
     */
    @Test
    void streamsWhoseOutputNoOneReadsHoldItAndStopNewStreamsUntilTheyEnd(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.unsentAnswersBudget(MIB))) {
            String id = server.createSandbox();
            EnvironmentBytes unsent = server.server.memoryBudgets().unsentAnswers();
            ManagedChannel small = RunningServer.authenticated(
                    server.server, Caller.DEFAULT_ENVIRONMENT, b -> b.flowControlWindow(64 << 10));
            List<ClientCall<?, ?>> unread = new ArrayList<>();
            try {
                Status refused = UnreadCalls.startUntilOneEnds(
                        40,
                        () -> unsent.held(Caller.DEFAULT_ENVIRONMENT),
                        closed -> unreadExec(small, id, closed),
                        unread);
                assertThat(refused).as("a stream refused").isNotNull();
                assertThat(refused.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(refused.getDescription())
                        .startsWith("no stream is opened: the answers this environment's clients have not read yet"
                                + " hold too many bytes: this environment holds ");
                assertThat(unsent.held(Caller.DEFAULT_ENVIRONMENT)).isGreaterThanOrEqualTo(MIB);

                // another environment's streams and answers go on: one tenant's streams count against its share alone
                ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
                try {
                    String other = RunningServer.createSandbox(prod);
                    CompletableFuture<Status> read = new CompletableFuture<>();
                    unreadExec(prod, other, read).request(Integer.MAX_VALUE);
                    assertThat(read.get(60, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
                } finally {
                    prod.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                }
            } finally {
                unread.forEach(c -> c.cancel("the test is done with it", null));
            }
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> unsent.held(Caller.DEFAULT_ENVIRONMENT) == 0);
            // a stream whose client reads holds little, and is opened again
            CompletableFuture<Status> read = new CompletableFuture<>();
            unreadExec(small, id, read).request(Integer.MAX_VALUE);
            assertThat(read.get(60, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
            small.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void streamsOfManyEnvironmentsStopAtTheirEvenPartOfTheServersBudget(@TempDir Path dataDir) throws Exception {
        // one environment may hold all of this budget (a largest answer is more), so that two environments show the
        // even part: with the budgets the server makes from its heap, one may hold half, and it takes three
        long budget = 2 * MIB;
        try (RunningServer server = RunningServer.start(dataDir, b -> b.unsentAnswersBudget(budget))) {
            EnvironmentBytes unsent = server.server.memoryBudgets().unsentAnswers();
            assertThat(unsent.share()).isEqualTo(budget);
            List<ManagedChannel> channels = new ArrayList<>();
            List<ClientCall<?, ?>> unread = new ArrayList<>();
            try {
                Map<String, Status> refusals = new LinkedHashMap<>();
                for (String environment : List.of(Caller.DEFAULT_ENVIRONMENT, "prod")) {
                    ManagedChannel channel =
                            RunningServer.authenticated(server.server, environment, b -> b.flowControlWindow(64 << 10));
                    channels.add(channel);
                    String id = RunningServer.createSandbox(channel);
                    refusals.put(
                            environment,
                            UnreadCalls.startUntilOneEnds(
                                    80, // an unread exec holds its last message: 64 to 256 KiB
                                    () -> unsent.held(environment),
                                    closed -> unreadExec(channel, id, closed),
                                    unread));
                }
                assertThat(refusals.values())
                        .as("each environment's streams were refused")
                        .doesNotContainNull();
                // the first holds its share, the whole budget; the second, only its even part: half
                assertThat(refusals.get(Caller.DEFAULT_ENVIRONMENT).getDescription())
                        .contains("this environment holds ");
                assertThat(unsent.held(Caller.DEFAULT_ENVIRONMENT)).isGreaterThanOrEqualTo(budget);
                Status second = refusals.get("prod");
                assertThat(second.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(second.getDescription())
                        .startsWith("no stream is opened: the answers clients have not read yet hold too many bytes:"
                                + " the environments together hold ")
                        .contains("its even part of them");
                assertThat(unsent.held("prod")).isBetween(budget / 2, budget - 1);

                // a third environment, holding nothing, still gets its streams
                ManagedChannel staging = RunningServer.authenticated(server.server, "staging");
                channels.add(staging);
                CompletableFuture<Status> read = new CompletableFuture<>();
                unreadExec(staging, RunningServer.createSandbox(staging), read).request(Integer.MAX_VALUE);
                assertThat(read.get(60, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
            } finally {
                unread.forEach(c -> c.cancel("the test is done with it", null));
                for (ManagedChannel channel : channels) {
                    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                }
            }
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> unsent.held("prod") == 0);
        }
    }

    /** A v1 Exec of 4 MiB of output whose client asks for none of it; {@code closed} gets how it ended. */
    private static ClientCall<ExecRequest, ExecResponse> unreadExec(
            ManagedChannel channel, String sandboxId, CompletableFuture<Status> closed) {
        return UnreadCalls.start(
                channel,
                ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc.getExecMethod(),
                CallOptions.DEFAULT,
                ExecRequest.newBuilder()
                        .setInit(ExecInit.newBuilder()
                                .setSandboxId(sandboxId)
                                .setCommand("head")
                                .addArgs("-c")
                                .addArgs("4194304")
                                .addArgs("/dev/zero"))
                        .build(),
                closed);
    }

    /** Opens a session running {@code sleep 600}, detaches, and returns how the stream ended. */
    private static Status openDetached(SandboxProcessServiceGrpc.SandboxProcessServiceStub processes, String sandboxId)
            throws Exception {
        CompletableFuture<Status> done = new CompletableFuture<>();
        CompletableFuture<StreamObserver<OpenSessionRequest>> requests = new CompletableFuture<>();
        StreamObserver<OpenSessionRequest> r = processes.openSession(new StreamObserver<>() {
            @Override
            public void onNext(OpenSessionResponse response) {
                if (response.hasSessionAttached()) {
                    requests.join()
                            .onNext(OpenSessionRequest.newBuilder()
                                    .setDetachSession(DetachSession.getDefaultInstance())
                                    .build());
                }
            }

            @Override
            public void onError(Throwable t) {
                done.complete(Status.fromThrowable(t));
            }

            @Override
            public void onCompleted() {
                done.complete(Status.OK);
            }
        });
        requests.complete(r);
        r.onNext(OpenSessionRequest.newBuilder()
                .setNewProcess(NewProcess.newBuilder()
                        .setSandboxId(sandboxId)
                        .setCommand("sleep")
                        .addArgs("600"))
                .build());
        Status status = done.get(60, TimeUnit.SECONDS);
        r.onCompleted();
        return status;
    }

    private static String echo(RunningServer server, String id) {
        return server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(id)
                        .setCommand("echo")
                        .addArgs("still serving")
                        .build())
                .getStdout()
                .toStringUtf8();
    }

    /** An observer of a call's responses that completes {@code done} with how the call ended. */
    private static <T> StreamObserver<T> statusOf(CompletableFuture<Status> done) {
        return new StreamObserver<>() {
            @Override
            public void onNext(T value) {}

            @Override
            public void onError(Throwable t) {
                done.complete(Status.fromThrowable(t));
            }

            @Override
            public void onCompleted() {
                done.complete(Status.OK);
            }
        };
    }

    private static List<CompletableFuture<Status>> concat(
            List<CompletableFuture<Status>> a, List<CompletableFuture<Status>> b) {
        List<CompletableFuture<Status>> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    /**
     * The attack on the per-caller shares: a caller without a token of this server names itself anew on every call
     * (a made-up credential each), so that each call would get a share of its own. Authentication checks the credential
     * as the call starts, so each call is ended (UNAUTHENTICATED) before its message has arrived, never refused for the
     * budget, and holds nothing afterwards.
     */
    @Test
    void callsWithMadeUpCredentialsEndBeforeTheirMessagesFillTheBudget(@TempDir Path dataDir) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .receivedMessagesBudget(8L * MIB)
                        .build()
                        .start();
                SlowRelay relay = new SlowRelay(server.port().orElseThrow())) {
            ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", relay.port())
                    .usePlaintext()
                    .build();
            try {
                List<CompletableFuture<Status>> puts = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    Metadata forged = new Metadata();
                    forged.put(BearerTokens.AUTHORIZATION, "Bearer made-up-" + i);
                    puts.add(put(
                            VolumeServiceGrpc.newStub(channel)
                                    .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(forged)),
                            "part-" + i,
                            6 * MIB));
                }
                assertThat(puts.stream().map(CompletableFuture::join).toList())
                        .extracting(Status::getCode)
                        .containsOnly(Status.Code.UNAUTHENTICATED);
                awaitReceivedMessagesBudgetWhole(server);
            } finally {
                channel.shutdownNow();
            }
        }
    }

    /** Waits until no bytes of the received-messages budget are held (calls end on the transport's threads). */
    private static void awaitReceivedMessagesBudgetWhole(ComputeServer server) {
        Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(
                                server.memoryBudgets().receivedMessages().used())
                        .isZero());
    }

    /** Sends a {@code PutFile} of {@code bytes} zeros to the volume "uploads"; completes with how the call ended. */
    private static CompletableFuture<Status> put(VolumeServiceGrpc.VolumeServiceStub stub, String path, int bytes) {
        CompletableFuture<Status> ended = new CompletableFuture<>();
        stub.withDeadlineAfter(60, TimeUnit.SECONDS)
                .putFile(
                        PutFileRequest.newBuilder()
                                .setVolumeName("uploads")
                                .setPath(path)
                                .setData(ByteString.copyFrom(new byte[bytes]))
                                .build(),
                        statusOf(ended));
        return ended;
    }

    /** A server on a loopback TCP port of its own, with no authentication and this budget for received messages. */
    private static ComputeServer serverOnTcp(Path dataDir, long receivedMessagesBudget) throws Exception {
        return ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .auth(Authentication.Mode.NONE)
                .receivedMessagesBudget(receivedMessagesBudget)
                .build()
                .start();
    }

    private static long heapAfterGc() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(200);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /**
     * Calls that each send a large message slowly (through a relay passing 32 KiB every 5 ms) would otherwise each hold
     * their message's bytes until it is whole. Past the budget for messages being received, calls fail with
     * RESOURCE_EXHAUSTED saying why; the others complete, the budget is whole again, and the server keeps serving.
     */
    @Test
    void largeMessagesBeingReceivedShareOneBudget(@TempDir Path dataDir) throws Exception {
        try (ComputeServer server = serverOnTcp(dataDir, 8L * MIB);
                SlowRelay relay = new SlowRelay(server.port().orElseThrow())) {
            ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", relay.port())
                    .usePlaintext()
                    .build();
            try {
                VolumeServiceGrpc.newBlockingStub(channel)
                        .createVolume(CreateVolumeRequest.newBuilder()
                                .setName("uploads")
                                .build());
                List<CompletableFuture<Status>> puts = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    CompletableFuture<Status> ended = put(VolumeServiceGrpc.newStub(channel), "part-" + i, 6 * MIB);
                    puts.add(ended);
                }
                List<Status> ends = puts.stream().map(CompletableFuture::join).toList();
                assertThat(ends)
                        .extracting(Status::getCode)
                        .contains(Status.Code.OK, Status.Code.RESOURCE_EXHAUSTED)
                        .containsOnly(Status.Code.OK, Status.Code.RESOURCE_EXHAUSTED);
                assertThat(ends)
                        .filteredOn(e -> e.getCode() == Status.Code.RESOURCE_EXHAUSTED)
                        .allSatisfy(e -> assertThat(e.getDescription())
                                .contains("receiving too many large messages at once")
                                .contains("PutFile")
                                .contains((8L * MIB) + " bytes of messages being received"));
                awaitReceivedMessagesBudgetWhole(server);
                assertThat(VolumeServiceGrpc.newBlockingStub(channel)
                                .listFiles(ListFilesRequest.newBuilder()
                                        .setVolumeName("uploads")
                                        .build())
                                .getFilesList())
                        .as("the calls that completed wrote their files whole")
                        .hasSize((int) ends.stream().filter(Status::isOk).count())
                        .allSatisfy(f -> assertThat(f.getSize()).isEqualTo(6L * MIB));
            } finally {
                channel.shutdownNow();
            }
        }
    }

    /**
     * A message's first MiB is not counted: a client that fills the budget holds back other large messages, not the
     * small requests of every call. With no budget at all, calls with small messages still work.
     */
    @Test
    void smallMessagesGoThroughWhateverTheBudgetHolds(@TempDir Path dataDir) throws Exception {
        try (ComputeServer server = serverOnTcp(dataDir, 0)) {
            ManagedChannel channel = NettyChannelBuilder.forAddress(
                            "127.0.0.1", server.port().orElseThrow())
                    .usePlaintext()
                    .build();
            try {
                VolumeServiceGrpc.VolumeServiceBlockingStub volumes = VolumeServiceGrpc.newBlockingStub(channel);
                volumes.createVolume(
                        CreateVolumeRequest.newBuilder().setName("uploads").build());
                volumes.putFile(PutFileRequest.newBuilder()
                        .setVolumeName("uploads")
                        .setPath("small")
                        .setData(ByteString.copyFrom(new byte[MIB - 1024]))
                        .build());
                StatusRuntimeException e = catchThrowableOfType(
                        StatusRuntimeException.class,
                        () -> volumes.putFile(PutFileRequest.newBuilder()
                                .setVolumeName("uploads")
                                .setPath("large")
                                .setData(ByteString.copyFrom(new byte[2 * MIB]))
                                .build()));
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(volumes.listFiles(ListFilesRequest.newBuilder()
                                        .setVolumeName("uploads")
                                        .build())
                                .getFilesList())
                        .extracting(f -> f.getPath())
                        .containsExactly("small");
                assertThat(server.memoryBudgets().receivedMessages().used()).isZero();
            } finally {
                channel.shutdownNow();
            }
        }
    }

    /** A TCP relay to a local port that passes what clients send 32 KiB at a time, 5 ms apart, and replies at once. */
    private static final class SlowRelay implements AutoCloseable {

        private final ServerSocket listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        private final List<Socket> sockets = new java.util.concurrent.CopyOnWriteArrayList<>();

        SlowRelay(int target) throws IOException {
            daemon(() -> {
                try {
                    while (true) {
                        Socket client = listener.accept();
                        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
                        sockets.add(client);
                        sockets.add(upstream);
                        daemon(() -> copy(client, upstream, true));
                        daemon(() -> copy(upstream, client, false));
                    }
                } catch (IOException closed) {
                    // the relay is closed
                }
            });
        }

        int port() {
            return listener.getLocalPort();
        }

        private static void daemon(Runnable work) {
            Thread t = new Thread(work, "slow-relay");
            t.setDaemon(true);
            t.start();
        }

        private static void copy(Socket from, Socket to, boolean slowly) {
            byte[] buffer = new byte[32 << 10];
            try {
                int n;
                while ((n = from.getInputStream().read(buffer)) > 0) {
                    to.getOutputStream().write(buffer, 0, n);
                    if (slowly) {
                        Thread.sleep(5);
                    }
                }
            } catch (IOException | InterruptedException e) {
                // one side closed
            } finally {
                try {
                    to.shutdownOutput();
                } catch (IOException e) {
                    // already closed
                }
            }
        }

        @Override
        public void close() throws IOException {
            listener.close();
            for (Socket s : sockets) {
                s.close();
            }
        }
    }
}
