package ai.chalk.compute.server.session;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v2.AttachSession;
import ai.chalk.compute.proto.sandbox.v2.DetachSession;
import ai.chalk.compute.proto.sandbox.v2.GetSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSessionsRequest;
import ai.chalk.compute.proto.sandbox.v2.NewProcess;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionRequest;
import ai.chalk.compute.proto.sandbox.v2.OpenSessionResponse;
import ai.chalk.compute.proto.sandbox.v2.ProcessState;
import ai.chalk.compute.proto.sandbox.v2.StdinData;
import ai.chalk.compute.proto.sandbox.v2.StdinEof;
import ai.chalk.compute.server.EventCollector;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.ByteString;
import io.grpc.Context;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** v2 sessions outlive their client's stream and replay what the client missed. */
class SessionSurvivesDisconnectTest {

    @TempDir
    static Path dataDir;

    static RunningServer server;
    static String sandbox;

    @BeforeAll
    static void start() throws Exception {
        server = RunningServer.start(dataDir, b -> b.sessionBufferBytes(64 * 1024));
        sandbox = server.createSandbox();
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
    }

    @Test
    void sessionSurvivesDisconnectAndReattachLosesNothing() throws Exception {
        String script = "for i in $(seq 1 60); do echo line$i; sleep 0.02; done";
        EventCollector<OpenSessionResponse> first = new EventCollector<>();
        Context.CancellableContext ctx = Context.current().withCancellation();
        StreamObserver<OpenSessionRequest> requests =
                ctx.call(() -> server.processesAsync().openSession(first));
        requests.onNext(OpenSessionRequest.newBuilder()
                .setNewProcess(NewProcess.newBuilder()
                        .setSandboxId(sandbox)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script))
                .build());
        String sessionId = first.await(OpenSessionResponse::hasSessionAttached, Duration.ofSeconds(10))
                .getSessionAttached()
                .getSessionId();
        OpenSessionResponse seen = first.await(
                r -> r.hasOutputData()
                        && r.getOutputData().getData().toStringUtf8().contains("line5"),
                Duration.ofSeconds(10));
        long lastSeq = seen.getSeq();
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        first.all.stream()
                .filter(OpenSessionResponse::hasOutputData)
                .forEach(r -> output.writeBytes(r.getOutputData().getData().toByteArray()));

        ctx.cancel(null); // the client disconnects abruptly
        Thread.sleep(400); // the process keeps writing while nobody is attached

        assertThat(server.processes()
                        .getSession(GetSessionRequest.newBuilder()
                                .setSandboxId(sandbox)
                                .setSessionId(sessionId)
                                .build())
                        .getSession()
                        .getProcessStatus()
                        .getState())
                .isEqualTo(ProcessState.PROCESS_STATE_RUNNING);

        EventCollector<OpenSessionResponse> second = new EventCollector<>();
        StreamObserver<OpenSessionRequest> again = server.processesAsync().openSession(second);
        again.onNext(OpenSessionRequest.newBuilder()
                .setAttachSession(AttachSession.newBuilder()
                        .setSandboxId(sandbox)
                        .setSessionId(sessionId)
                        .setAfterSeq(lastSeq))
                .build());
        List<OpenSessionResponse> rest = second.drain(Duration.ofSeconds(20));
        assertThat(second.end.join()).isNull();
        assertThat(rest.get(0).hasSessionAttached()).isTrue();
        assertThat(rest).noneMatch(OpenSessionResponse::hasError);
        rest.stream()
                .filter(OpenSessionResponse::hasOutputData)
                .forEach(r -> output.writeBytes(r.getOutputData().getData().toByteArray()));
        OpenSessionResponse exit = rest.get(rest.size() - 1);
        assertThat(exit.hasProcessExited()).isTrue();
        assertThat(exit.getProcessExited().getExitCode()).isZero();

        String expected =
                IntStream.rangeClosed(1, 60).mapToObj(i -> "line" + i + "\n").collect(Collectors.joining());
        assertThat(output.toString(StandardCharsets.UTF_8)).isEqualTo(expected);
        // sequence numbers only grow, with no gap and no repeat across the two streams
        List<Long> seqs = rest.stream().skip(1).map(OpenSessionResponse::getSeq).toList();
        assertThat(seqs.get(0)).isEqualTo(lastSeq + 1);
        for (int i = 1; i < seqs.size(); i++) {
            assertThat(seqs.get(i)).isEqualTo(seqs.get(i - 1) + 1);
        }

        var listed = server.processes()
                .listSessions(
                        ListSessionsRequest.newBuilder().setSandboxId(sandbox).build());
        assertThat(listed.getSessionsList()).anySatisfy(s -> {
            assertThat(s.getSessionId()).isEqualTo(sessionId);
            assertThat(s.getProcessStatus().getState()).isEqualTo(ProcessState.PROCESS_STATE_EXITED);
            assertThat(s.getNewProcess().getCommand()).isEqualTo("sh");
        });
    }

    @Test
    void detachLeavesTheProcessRunningAndStdinWorksAfterReattach() throws Exception {
        EventCollector<OpenSessionResponse> first = new EventCollector<>();
        StreamObserver<OpenSessionRequest> requests = server.processesAsync().openSession(first);
        requests.onNext(OpenSessionRequest.newBuilder()
                .setNewProcess(NewProcess.newBuilder().setSandboxId(sandbox).setCommand("cat"))
                .build());
        String sessionId = first.await(OpenSessionResponse::hasSessionAttached, Duration.ofSeconds(10))
                .getSessionAttached()
                .getSessionId();
        requests.onNext(OpenSessionRequest.newBuilder()
                .setStdinData(StdinData.newBuilder().setData(ByteString.copyFromUtf8("before\n")))
                .build());
        OpenSessionResponse echoed = first.await(OpenSessionResponse::hasOutputData, Duration.ofSeconds(10));
        requests.onNext(OpenSessionRequest.newBuilder()
                .setDetachSession(DetachSession.getDefaultInstance())
                .build());
        first.await(OpenSessionResponse::hasSessionDetached, Duration.ofSeconds(10));
        assertThat(first.drain(Duration.ofSeconds(5))).noneMatch(OpenSessionResponse::hasProcessExited);

        EventCollector<OpenSessionResponse> second = new EventCollector<>();
        StreamObserver<OpenSessionRequest> again = server.processesAsync().openSession(second);
        again.onNext(OpenSessionRequest.newBuilder()
                .setAttachSession(AttachSession.newBuilder()
                        .setSandboxId(sandbox)
                        .setSessionId(sessionId)
                        .setAfterSeq(echoed.getSeq()))
                .build());
        second.await(OpenSessionResponse::hasSessionAttached, Duration.ofSeconds(10));
        again.onNext(OpenSessionRequest.newBuilder()
                .setStdinData(StdinData.newBuilder().setData(ByteString.copyFromUtf8("after\n")))
                .build());
        assertThat(second.await(OpenSessionResponse::hasOutputData, Duration.ofSeconds(10))
                        .getOutputData()
                        .getData()
                        .toStringUtf8())
                .isEqualTo("after\n");
        again.onNext(OpenSessionRequest.newBuilder()
                .setStdinEof(StdinEof.getDefaultInstance())
                .build());
        assertThat(second.await(OpenSessionResponse::hasProcessExited, Duration.ofSeconds(10))
                        .getProcessExited()
                        .getExitCode())
                .isZero();
    }

    @Test
    void outputDroppedPastTheBufferIsReportedNotSilentlyLost() throws Exception {
        EventCollector<OpenSessionResponse> first = new EventCollector<>();
        Context.CancellableContext ctx = Context.current().withCancellation();
        StreamObserver<OpenSessionRequest> requests =
                ctx.call(() -> server.processesAsync().openSession(first));
        // 1 MiB while detached: far more than the 64 KiB this server keeps per session
        requests.onNext(OpenSessionRequest.newBuilder()
                .setNewProcess(NewProcess.newBuilder()
                        .setSandboxId(sandbox)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs("sleep 0.5; head -c 1048576 /dev/zero; echo; echo done"))
                .build());
        String sessionId = first.await(OpenSessionResponse::hasSessionAttached, Duration.ofSeconds(10))
                .getSessionAttached()
                .getSessionId();
        ctx.cancel(null); // gone before the output starts
        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(20))
                .until(() -> server.processes()
                                .getSession(GetSessionRequest.newBuilder()
                                        .setSandboxId(sandbox)
                                        .setSessionId(sessionId)
                                        .build())
                                .getSession()
                                .getProcessStatus()
                                .getState()
                        == ProcessState.PROCESS_STATE_EXITED);

        EventCollector<OpenSessionResponse> second = new EventCollector<>();
        server.processesAsync()
                .openSession(second)
                .onNext(OpenSessionRequest.newBuilder()
                        .setAttachSession(AttachSession.newBuilder()
                                .setSandboxId(sandbox)
                                .setSessionId(sessionId)
                                .setAfterSeq(0))
                        .build());
        List<OpenSessionResponse> events = second.drain(Duration.ofSeconds(20));
        OpenSessionResponse gap = events.stream()
                .filter(OpenSessionResponse::hasError)
                .findFirst()
                .orElseThrow();
        assertThat(gap.getError().getCode()).isEqualTo("OUTPUT_DROPPED");
        assertThat(gap.getError().getMessage()).contains("were dropped").contains("65536 bytes");
        long kept = events.stream()
                .filter(OpenSessionResponse::hasOutputData)
                .mapToLong(r -> r.getOutputData().getData().size())
                .sum();
        assertThat(kept).isPositive().isLessThanOrEqualTo(64 * 1024);
        assertThat(events.get(events.size() - 1).hasProcessExited()).isTrue();
        String tail = events.stream()
                .filter(OpenSessionResponse::hasOutputData)
                .map(r -> r.getOutputData().getData().toStringUtf8())
                .collect(Collectors.joining());
        assertThat(tail).endsWith("done\n");
    }

    @Test
    void onlyTheNewestFinishedSessionsAreKept() throws Exception {
        String own = server.createSandbox();
        java.util.List<String> ids = new java.util.ArrayList<>();
        for (int i = 0; i < SessionRegistry.KEPT_FINISHED + 4; i++) {
            EventCollector<OpenSessionResponse> events = new EventCollector<>();
            server.processesAsync()
                    .openSession(events)
                    .onNext(OpenSessionRequest.newBuilder()
                            .setNewProcess(NewProcess.newBuilder()
                                    .setSandboxId(own)
                                    .setCommand("echo")
                                    .addArgs("n" + i))
                            .build());
            ids.add(events.await(OpenSessionResponse::hasSessionAttached, Duration.ofSeconds(10))
                    .getSessionAttached()
                    .getSessionId());
            events.await(OpenSessionResponse::hasProcessExited, Duration.ofSeconds(10));
        }
        var listed = server
                .processes()
                .listSessions(ListSessionsRequest.newBuilder().setSandboxId(own).build())
                .getSessionsList()
                .stream()
                .map(s -> s.getSessionId())
                .toList();
        assertThat(listed).containsExactlyInAnyOrderElementsOf(ids.subList(4, ids.size()));
        server.terminate(own);
    }
}
