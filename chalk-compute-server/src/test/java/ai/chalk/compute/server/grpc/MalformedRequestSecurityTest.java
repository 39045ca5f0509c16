package ai.chalk.compute.server.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.server.RunningServer;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.Status;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Garbage sent as a request over TCP, as anyone who reaches the port can: every one is answered
 * INVALID_ARGUMENT, the log gets a line per window rather than a stack trace per message, and the server
 * goes on serving.
 */
@Tag("alone")
class MalformedRequestSecurityTest {

    /** Bytes that are no protobuf message: the first tag has wire type 7, which does not exist. */
    private static byte[] garbage(Random random) {
        byte[] b = new byte[1 + random.nextInt(512)];
        random.nextBytes(b);
        b[0] = (byte) 0x0F;
        return b;
    }

    @Test
    void aThousandMalformedRequestsAreRefusedAsInvalidArgumentWithoutFloodingTheLog(@TempDir Path dataDir)
            throws Exception {
        ch.qos.logback.classic.Logger root = (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("ROOT");
        ListAppender<ILoggingEvent> ours = new ListAppender<>();
        ours.start();
        root.addAppender(ours);
        List<LogRecord> grpcs = java.util.Collections.synchronizedList(new ArrayList<>());
        Handler julHandler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
                    grpcs.add(r);
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        java.util.logging.Logger.getLogger("").addHandler(julHandler);
        try (RunningServer server = RunningServer.start(dataDir)) {
            Random random = new Random(10);
            List<CompletableFuture<Status>> calls = new ArrayList<>();
            long started = System.nanoTime();
            for (int i = 0; i < 1000; i++) {
                calls.add(
                        switch (i % 4) {
                            case 0 ->
                                RawCalls.send(
                                        server.channel, SandboxServiceGrpc.getCreateSandboxMethod(), garbage(random));
                            case 1 ->
                                RawCalls.send(server.channel, SandboxServiceGrpc.getExecMethod(), garbage(random));
                            case 2 ->
                                RawCalls.send(
                                        server.channel,
                                        SandboxProcessServiceGrpc.getOpenSessionMethod(),
                                        garbage(random),
                                        garbage(random));
                            // fewer health checks than one address may have under way at once (CallsInFlight)
                            default ->
                                i < 200
                                        ? RawCalls.send(server.channel, HealthGrpc.getCheckMethod(), garbage(random))
                                        : RawCalls.send(
                                                server.channel,
                                                SandboxServiceGrpc.getGetSandboxMethod(),
                                                garbage(random));
                        });
            }
            for (CompletableFuture<Status> call : calls) {
                Status status = call.get(60, TimeUnit.SECONDS);
                assertThat(status.getCode()).as("%s", status).isEqualTo(Status.Code.INVALID_ARGUMENT);
                assertThat(status.getDescription())
                        .contains("is not a valid protobuf message")
                        .hasSizeLessThan(400);
            }
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);

            List<ILoggingEvent> lines = ours.list.stream()
                    .filter(e -> e.getLoggerName().equals(MalformedRequests.class.getName()))
                    .toList();
            assertThat(lines).hasSizeBetween(1, (int) (2 + seconds / MalformedRequests.LOG_WINDOW.toSeconds()));
            assertThat(lines)
                    .allMatch(e -> e.getThrowableProxy() == null)
                    .allMatch(e -> e.getFormattedMessage().length() < 600);
            assertThat(ours.list).noneMatch(e -> e.getThrowableProxy() != null);
            assertThat(grpcs).as("grpc-java's own warnings").isEmpty();

            // a well-formed request on the same channel is served as usual
            assertThat(HealthGrpc.newBlockingStub(server.channel)
                            .check(HealthCheckRequest.getDefaultInstance())
                            .getStatus())
                    .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
            String id = server.createSandbox();
            assertThat(server.sandboxes()
                            .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                            .getSandboxesList())
                    .anyMatch(s -> s.getId().equals(id));
            server.terminate(id);
            // the guarded services still describe themselves through reflection
            assertThat(reflectedServices(server))
                    .contains(
                            "chalk.sandbox.v1.SandboxService",
                            "chalk.sandbox.v2.SandboxProcessService",
                            "grpc.health.v1.Health");
        } finally {
            root.detachAppender(ours);
            java.util.logging.Logger.getLogger("").removeHandler(julHandler);
        }
    }

    private static List<String> reflectedServices(RunningServer server) throws Exception {
        CompletableFuture<List<String>> names = new CompletableFuture<>();
        io.grpc.stub.StreamObserver<io.grpc.reflection.v1.ServerReflectionRequest> requests =
                io.grpc.reflection.v1.ServerReflectionGrpc.newStub(server.channel)
                        .serverReflectionInfo(new io.grpc.stub.StreamObserver<>() {
                            @Override
                            public void onNext(io.grpc.reflection.v1.ServerReflectionResponse r) {
                                names.complete(r.getListServicesResponse().getServiceList().stream()
                                        .map(io.grpc.reflection.v1.ServiceResponse::getName)
                                        .toList());
                            }

                            @Override
                            public void onError(Throwable t) {
                                names.completeExceptionally(t);
                            }

                            @Override
                            public void onCompleted() {}
                        });
        requests.onNext(io.grpc.reflection.v1.ServerReflectionRequest.newBuilder()
                .setListServices("")
                .build());
        List<String> result = names.get(30, TimeUnit.SECONDS);
        requests.onCompleted();
        return result;
    }

    @Test
    void aMalformedMessageInTheMiddleOfAnExecEndsItAndKillsItsProcess(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            String id = server.createSandbox();
            byte[] init = ai.chalk.compute.proto.sandbox.v1.ExecRequest.newBuilder()
                    .setInit(ai.chalk.compute.proto.sandbox.v1.ExecInit.newBuilder()
                            .setSandboxId(id)
                            .setCommand("sleep")
                            .addArgs("300"))
                    .build()
                    .toByteArray();
            Status status = RawCalls.send(
                            server.channel, SandboxServiceGrpc.getExecMethod(), init, garbage(new Random(1)))
                    .get(60, TimeUnit.SECONDS);
            assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            org.awaitility.Awaitility.await()
                    .atMost(java.time.Duration.ofSeconds(20))
                    .until(() -> ProcessHandle.allProcesses()
                            .noneMatch(p -> p.info().commandLine().orElse("").contains("sleep 300")
                                    && p.info().commandLine().orElse("").length() < 40));
            server.terminate(id);
        }
    }
}
