package ai.chalk.compute.server.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecInit;
import ai.chalk.compute.proto.sandbox.v1.ExecRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesResponse;
import ai.chalk.compute.proto.sandbox.v1.ResourceLimits;
import ai.chalk.compute.proto.sandbox.v1.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v1.StdinEof;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandResponse;
import ai.chalk.compute.server.EventCollector;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The v1 SandboxService and v2 ExecCommand over TCP through the generated stubs, as a client
 * written independently from Chalk's descriptors uses them; bad requests get actionable statuses.
 */
@Tag("alone")
class SandboxServiceContractTest extends RunningServer.PerTestClass {

    private static List<ExecResponse> exec(ExecInit init) throws Exception {
        EventCollector<ExecResponse> events = new EventCollector<>();
        StreamObserver<ExecRequest> requests = server.sandboxesAsync().exec(events);
        requests.onNext(ExecRequest.newBuilder().setInit(init).build());
        requests.onNext(ExecRequest.newBuilder()
                .setStdinEof(StdinEof.getDefaultInstance())
                .build());
        requests.onCompleted();
        return events.drain(Duration.ofSeconds(30));
    }

    @Test
    void createExecGetListTerminate() throws Exception {
        SandboxInfo created = server.sandboxes()
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setName("contract")
                        .putEnv("GREETING", "hi")
                        .setResourceLimits(
                                ResourceLimits.newBuilder().setCpu("500m").setMemory("256Mi"))
                        .build())
                .getSandbox();
        assertThat(created.getState()).isEqualTo("RUNNING");
        assertThat(created.getName()).isEqualTo("contract");
        assertThat(Instant.parse(created.getCreatedAt())).isBefore(Instant.now().plusSeconds(1));

        List<ExecResponse> events = exec(ExecInit.newBuilder()
                .setSandboxId(created.getId())
                .setCommand("sh")
                .addArgs("-c")
                .addArgs("echo $GREETING $EXTRA; echo oops >&2; exit 3")
                .putEnv("EXTRA", "there")
                .build());
        assertThat(events.get(0).hasProcessStarted()).isTrue();
        // 0 when the command ended before its pid could be read; never a wrapped negative
        assertThat(Integer.toUnsignedLong(events.get(0).getProcessStarted().getPid()))
                .isLessThan(1L << 22);
        String out = events.stream()
                .filter(e -> e.hasOutputData() && e.getOutputData().getStreamValue() == 1)
                .map(e -> e.getOutputData().getData().toStringUtf8())
                .reduce("", String::concat);
        String err = events.stream()
                .filter(e -> e.hasOutputData() && e.getOutputData().getStreamValue() == 2)
                .map(e -> e.getOutputData().getData().toStringUtf8())
                .reduce("", String::concat);
        assertThat(out).isEqualTo("hi there\n");
        assertThat(err).isEqualTo("oops\n");
        ExecResponse last = events.get(events.size() - 1);
        assertThat(last.getProcessExited().getExitCode()).isEqualTo(3);
        assertThat(last.getProcessExited().hasSignal()).isFalse();

        ExecCommandResponse one = server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(created.getId())
                        .setCommand("tr")
                        .addArgs("a-z")
                        .addArgs("A-Z")
                        .setStdin(ByteString.copyFromUtf8("shout"))
                        .build());
        assertThat(one.getStdout().toStringUtf8()).isEqualTo("SHOUT");
        assertThat(one.getExitCode()).isZero();

        assertThat(server.sandboxes()
                        .getSandbox(GetSandboxRequest.newBuilder()
                                .setSandboxId(created.getId())
                                .build())
                        .getSandbox()
                        .getState())
                .isEqualTo("RUNNING");
        server.terminate(created.getId());
        assertThatThrownBy(() -> server.sandboxes()
                        .getSandbox(GetSandboxRequest.newBuilder()
                                .setSandboxId(created.getId())
                                .build()))
                .satisfies(e -> assertThat(Status.fromThrowable(e).getCode()).isEqualTo(Status.Code.NOT_FOUND));
        SandboxInfo after = server.sandboxes()
                .getSandbox(GetSandboxRequest.newBuilder()
                        .setSandboxId(created.getId())
                        .setIncludeTerminated(true)
                        .build())
                .getSandbox();
        assertThat(after.getState()).isEqualTo("TERMINATED");
        assertThat(after.getStatusMessage()).contains("requested by a client");
        // terminating twice is harmless
        server.terminate(created.getId());
    }

    /**
     * Two terminates at once (a client's while the lifetime runs out, or two clients'): the second used to answer at
     * once, the sandbox's processes still running through the first's grace period and its place still held.
     */
    @Test
    void aTerminateWhileAnotherIsUnderWayAnswersOnceTheSandboxHasEnded() throws Exception {
        String id = server.createSandbox();
        assertThat(server.processes()
                        .execCommand(ExecCommandRequest.newBuilder()
                                .setSandboxId(id)
                                .setCommand("sh")
                                .addArgs("-c")
                                .addArgs("(trap '' TERM; exec sleep 4719) >/dev/null 2>&1 </dev/null &")
                                .build())
                        .getExitCode())
                .isZero();
        java.util.concurrent.CompletableFuture<Void> first =
                java.util.concurrent.CompletableFuture.runAsync(() -> server.sandboxes()
                        .terminateSandbox(TerminateSandboxRequest.newBuilder()
                                .setSandboxId(id)
                                .setGracePeriodSeconds(2)
                                .build()));
        Thread.sleep(300);
        server.terminate(id);
        assertThat(server.sandboxes()
                        .getSandbox(GetSandboxRequest.newBuilder()
                                .setSandboxId(id)
                                .setIncludeTerminated(true)
                                .build())
                        .getSandbox()
                        .getState())
                .isEqualTo("TERMINATED");
        first.get(30, java.util.concurrent.TimeUnit.SECONDS);
    }

    @Test
    void listPagesWithACursorAndFiltersStates() {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ids.add(server.createSandbox());
        }
        server.terminate(ids.get(0));
        List<String> seen = new ArrayList<>();
        ListSandboxesRequest.Builder req =
                ListSandboxesRequest.newBuilder().setLimit(2).setIncludeTerminated(true);
        while (true) {
            ListSandboxesResponse page = server.sandboxes().listSandboxes(req.build());
            assertThat(page.getSandboxesCount()).isLessThanOrEqualTo(2);
            page.getSandboxesList().forEach(s -> seen.add(s.getId()));
            if (!page.hasNextCursor()) {
                break;
            }
            req.setCursor(page.getNextCursor());
        }
        assertThat(seen).containsAll(ids).doesNotHaveDuplicates();
        List<String> running = server
                .sandboxes()
                .listSandboxes(ListSandboxesRequest.newBuilder().setLimit(1000).build())
                .getSandboxesList()
                .stream()
                .map(SandboxInfo::getId)
                .toList();
        assertThat(running).containsAll(ids.subList(1, 5)).doesNotContain(ids.get(0));
        List<String> terminated = server
                .sandboxes()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .addStates("terminated")
                        .setLimit(1000)
                        .build())
                .getSandboxesList()
                .stream()
                .map(SandboxInfo::getId)
                .toList();
        assertThat(terminated).contains(ids.get(0)).doesNotContain(ids.get(1));
        List<String> notRunning = server
                .sandboxes()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setIncludeTerminated(true)
                        .addNotStates("RUNNING")
                        .setLimit(1000)
                        .build())
                .getSandboxesList()
                .stream()
                .map(SandboxInfo::getId)
                .toList();
        assertThat(notRunning).contains(ids.get(0)).doesNotContainAnyElementsOf(ids.subList(1, 5));
        ids.subList(1, 5).forEach(server::terminate);
    }

    @Test
    void badRequestsGetActionableStatusesAndTheServerKeepsServing() throws Exception {
        expectStatus(
                () -> server.sandboxes()
                        .getSandbox(GetSandboxRequest.newBuilder()
                                .setSandboxId("nope")
                                .build()),
                Status.Code.NOT_FOUND,
                "sandbox nope does not exist");
        expectStatus(
                () -> server.sandboxes()
                        .terminateSandbox(TerminateSandboxRequest.newBuilder()
                                .setSandboxId("nope")
                                .build()),
                Status.Code.NOT_FOUND,
                "does not exist");
        expectStatus(
                () -> server.sandboxes()
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .setResourceLimits(ResourceLimits.newBuilder().setMemory("4Gx"))
                                .build()),
                Status.Code.INVALID_ARGUMENT,
                "resource_limits.memory \"4Gx\"");
        expectStatus(
                () -> server.sandboxes()
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .setResourceLimits(ResourceLimits.newBuilder().setCpu("two"))
                                .build()),
                Status.Code.INVALID_ARGUMENT,
                "resource_limits.cpu");
        Map<String, String> huge = new HashMap<>();
        for (int i = 0; i < 2000; i++) {
            huge.put("VAR" + i, "x");
        }
        expectStatus(
                () -> server.sandboxes()
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .putAllEnv(huge)
                                .build()),
                Status.Code.INVALID_ARGUMENT,
                "env has 2000 variables");
        expectStatus(
                () -> server.sandboxes()
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .setImage("ubuntu:latest")
                                .build()),
                Status.Code.FAILED_PRECONDITION,
                "image \"ubuntu:latest\" ");
        expectStatus(
                () -> server.sandboxes()
                        .listSandboxes(ListSandboxesRequest.newBuilder()
                                .setCursor("zzz")
                                .build()),
                Status.Code.INVALID_ARGUMENT,
                "cursor");

        String id = server.createSandbox();
        List<ExecResponse> empty =
                exec(ExecInit.newBuilder().setSandboxId(id).setCommand("").build());
        assertThat(empty).singleElement().satisfies(e -> {
            assertThat(e.getError().getCode()).isEqualTo("INVALID_ARGUMENT");
            assertThat(e.getError().getMessage()).contains("command is required");
        });
        List<ExecResponse> unknown = exec(
                ExecInit.newBuilder().setSandboxId("nope").setCommand("true").build());
        assertThat(unknown.get(0).getError().getCode()).isEqualTo("NOT_FOUND");
        List<ExecResponse> oversizedEnv = exec(ExecInit.newBuilder()
                .setSandboxId(id)
                .setCommand("true")
                .putEnv("BIG", "x".repeat(200_000))
                .build());
        assertThat(oversizedEnv.get(0).getError().getMessage()).contains("bytes of environment");
        List<ExecResponse> relative = exec(ExecInit.newBuilder()
                .setSandboxId(id)
                .setCommand("true")
                .setWorkdir("rel")
                .build());
        assertThat(relative.get(0).getError().getMessage()).contains("must be an absolute path");

        server.terminate(id);
        List<ExecResponse> afterTerminate =
                exec(ExecInit.newBuilder().setSandboxId(id).setCommand("true").build());
        assertThat(afterTerminate.get(0).getError().getCode()).isEqualTo("FAILED_PRECONDITION");
        assertThat(afterTerminate.get(0).getError().getMessage())
                .contains("TERMINATED")
                .contains("create a new sandbox");
        expectStatus(
                () -> server.processes()
                        .execCommand(ExecCommandRequest.newBuilder()
                                .setSandboxId(id)
                                .setCommand("true")
                                .build()),
                Status.Code.FAILED_PRECONDITION,
                "TERMINATED");

        // and the server still serves
        String fresh = server.createSandbox();
        List<ExecResponse> ok = exec(
                ExecInit.newBuilder().setSandboxId(fresh).setCommand("true").build());
        assertThat(ok.get(ok.size() - 1).getProcessExited().getExitCode()).isZero();
        server.terminate(fresh);
    }

    @Test
    void signalsGetThroughWhileAProcessIgnoresItsStdin() throws Exception {
        String id = server.createSandbox();
        EventCollector<ExecResponse> events = new EventCollector<>();
        StreamObserver<ExecRequest> requests = server.sandboxesAsync().exec(events);
        requests.onNext(ExecRequest.newBuilder()
                .setInit(ExecInit.newBuilder()
                        .setSandboxId(id)
                        .setCommand("sleep")
                        .addArgs("1000"))
                .build());
        events.await(ExecResponse::hasProcessStarted, Duration.ofSeconds(10));
        byte[] chunk = new byte[128 * 1024];
        for (int i = 0; i < 6; i++) { // 768 KiB that sleep never reads: far more than its pipe holds
            requests.onNext(ExecRequest.newBuilder()
                    .setStdinData(ai.chalk.compute.proto.sandbox.v1.StdinData.newBuilder()
                            .setData(ByteString.copyFrom(chunk)))
                    .build());
        }
        requests.onNext(ExecRequest.newBuilder()
                .setSignal(ai.chalk.compute.proto.sandbox.v1.ExecSignal.newBuilder()
                        .setSignal(9))
                .build());
        ExecResponse exited = events.await(ExecResponse::hasProcessExited, Duration.ofSeconds(10));
        assertThat(exited.getProcessExited().getSignal()).isEqualTo(9);
        requests.onCompleted();

        // past the stdin bound, messages wait their turn behind the input; cancelling still kills the process
        String marker = "1001." + ProcessHandle.current().pid();
        EventCollector<ExecResponse> flooded = new EventCollector<>();
        io.grpc.Context.CancellableContext ctx = io.grpc.Context.current().withCancellation();
        StreamObserver<ExecRequest> flood =
                ctx.call(() -> server.sandboxesAsync().exec(flooded));
        flood.onNext(ExecRequest.newBuilder()
                .setInit(ExecInit.newBuilder()
                        .setSandboxId(id)
                        .setCommand("sleep")
                        .addArgs(marker))
                .build());
        flooded.await(ExecResponse::hasProcessStarted, Duration.ofSeconds(10));
        for (int i = 0; i < 24; i++) { // 3 MiB
            flood.onNext(ExecRequest.newBuilder()
                    .setStdinData(ai.chalk.compute.proto.sandbox.v1.StdinData.newBuilder()
                            .setData(ByteString.copyFrom(chunk)))
                    .build());
        }
        ctx.cancel(null);
        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .until(() -> ProcessHandle.allProcesses()
                        .noneMatch(p -> p.info().commandLine().orElse("").contains("sleep " + marker)));
        server.terminate(id);
    }

    @Test
    void aCommandThatLeavesABackgroundProcessStillReturns() {
        String id = server.createSandbox();
        long start = System.nanoTime();
        ExecCommandResponse r = server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(id)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs("echo hi; sleep 30 & echo started")
                        .build());
        assertThat(r.getStdout().toStringUtf8()).isEqualTo("hi\nstarted\n");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
        server.terminate(id);
    }

    @Test
    void outOfRangeValuesAreInvalidNotInternal() {
        expectStatus(
                () -> server.sandboxes()
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .setName("n".repeat(300))
                                .build()),
                Status.Code.INVALID_ARGUMENT,
                "name is 300 characters");
        expectStatus(
                () -> server.sandboxes()
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .setResourceLimits(ResourceLimits.newBuilder().setMemory("20000000Ti"))
                                .build()),
                Status.Code.INVALID_ARGUMENT,
                "at most 1Pi");
        expectStatus(
                () -> server.sandboxes()
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .setResourceLimits(ResourceLimits.newBuilder().setCpu("18446744073709552"))
                                .build()),
                Status.Code.INVALID_ARGUMENT,
                "at most 1000000 cores");
        String id = server.createSandbox();
        expectStatus(
                () -> server.processes()
                        .execCommand(ExecCommandRequest.newBuilder()
                                .setSandboxId(id)
                                .setCommand("true")
                                .setTimeout(com.google.protobuf.Duration.newBuilder()
                                        .setSeconds(5)
                                        .setNanos(-5))
                                .build()),
                Status.Code.INVALID_ARGUMENT,
                "not a valid duration");
        server.terminate(id);
    }

    private static void expectStatus(Runnable call, Status.Code code, String messagePart) {
        assertThatThrownBy(call::run).isInstanceOf(StatusRuntimeException.class).satisfies(e -> {
            Status status = ((StatusRuntimeException) e).getStatus();
            assertThat(status.getCode()).isEqualTo(code);
            assertThat(status.getDescription()).contains(messagePart);
        });
    }
}
