package ai.chalk.compute.server.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecInit;
import ai.chalk.compute.proto.sandbox.v1.ExecRequest;
import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import ai.chalk.compute.server.threads.EnvironmentShares;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A tenant tries to make the server start threads until it has no memory left: every running command holds about three
 * server threads (its output pumps, the wait for its exit), and a sandbox's process limit bounds only the commands of
 * one sandbox. Before the limit, 900 {@code sleep}s in one sandbox held 2,700 server threads, and a tenant's sandboxes
 * together could hold hundreds of thousands. Commands are now counted server-wide, one environment runs at most half,
 * the rest are refused with RESOURCE_EXHAUSTED saying why, and other environments go on; on the local runtime and on
 * Docker alike, since the count is the server's, whatever runs the commands.
 */
@Tag("alone")
class RunningCommandsSecurityTest {

    private static final int LIMIT = 8;

    @ParameterizedTest
    @ValueSource(strings = {"local", "docker"})
    void oneEnvironmentRunsHalfTheServersCommandsAndTheServerItsLimit(String runtime, @TempDir Path dataDir)
            throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> {
            b.maxRunningCommands(LIMIT);
            return runtime.equals("docker")
                    ? b.runtime(DockerRuntimeOptions.builder()
                            .defaultImage(DockerTesting.image())
                            .build())
                    : b;
        })) {
            RunningCommands commands = server.server.runningCommands();
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            ManagedChannel staging = RunningServer.authenticated(server.server, "staging");
            List<Exec> sleeps = new ArrayList<>();
            try {
                String devBox = create(dev);
                String prodBox = create(prod);
                String stagingBox = create(staging);
                int threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();
                long serverThreadsBefore = serverThreads();

                for (int i = 0; i < LIMIT / 2; i++) {
                    sleeps.add(Exec.start(dev, devBox, "sleep", "600").running());
                }
                Status share = Exec.start(dev, devBox, "true").ended();
                assertThat(share.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(share.getDescription())
                        .contains("this environment runs 4 commands at once, the most one environment may (half of"
                                + " the 8 the server runs");
                // another sandbox of the same environment shares its share, and one-shot commands count too
                assertThat(Exec.start(dev, create(dev), "true").ended().getCode())
                        .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                StatusRuntimeException oneShot = catchThrowableOfType(
                        () -> SandboxProcessServiceGrpc.newBlockingStub(dev)
                                .execCommand(ExecCommandRequest.newBuilder()
                                        .setSandboxId(devBox)
                                        .setCommand("true")
                                        .build()),
                        StatusRuntimeException.class);
                assertThat(oneShot.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);

                // another environment is not held back by the first
                for (int i = 0; i < LIMIT / 2; i++) {
                    sleeps.add(Exec.start(prod, prodBox, "sleep", "600").running());
                }
                // the server is full: a third environment is told so
                Status full = Exec.start(staging, stagingBox, "true").ended();
                assertThat(full.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(full.getDescription()).contains("the server runs 8 commands at once, its limit");
                assertThat(commands.running()).isEqualTo(LIMIT);
                // the server's own threads (its pumps, its runtime's helpers) a few per command; the whole JVM's,
                // gRPC's
                // and the test's event loops included, which grow with the calls open, within twice that
                assertThat(serverThreads() - serverThreadsBefore)
                        .as("the server's threads the running commands hold")
                        .isLessThan(LIMIT * 4);
                assertThat(ManagementFactory.getThreadMXBean().getThreadCount() - threadsBefore)
                        .as("threads the running commands hold, the JVM's")
                        .isLessThan(LIMIT * 8);

                // a command that ends gives its place back; the refused ones held none
                sleeps.remove(0).cancel();
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> commands.running() == LIMIT - 1);
                assertThat(Exec.start(dev, devBox, "true").ended().getCode()).isEqualTo(Status.Code.OK);

                sleeps.forEach(Exec::cancel);
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> commands.running() == 0);
                assertThat(Exec.start(staging, stagingBox, "true").ended().getCode())
                        .isEqualTo(Status.Code.OK);
            } finally {
                sleeps.forEach(Exec::cancel);
                for (ManagedChannel c : List.of(dev, prod, staging)) {
                    c.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    /**
     * A command that leaves a process behind holding its output ends for its client, but the pump reading that output
     * keeps its thread until the process ends or closes it: before, the place went back at once, so {@code sh -c
     * 'sleep 1e9 &'} in a loop left two server threads each, counted by no one.
     */
    @Test
    void aCommandsPlaceIsHeldWhileWhatItLeftBehindHoldsItsOutput(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.maxRunningCommands(LIMIT))) {
            RunningCommands commands = server.server.runningCommands();
            String box = server.createSandbox();
            for (int i = 0; i < LIMIT / 2; i++) {
                assertThat(Exec.start(server.channel, box, "sh", "-c", "sleep 600 &")
                                .ended()
                                .getCode())
                        .isEqualTo(Status.Code.OK);
            }
            assertThat(commands.running())
                    .as("commands whose output a leftover holds")
                    .isEqualTo(LIMIT / 2);
            Status refused = Exec.start(server.channel, box, "true").ended();
            assertThat(refused.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            // the leftovers end with their sandbox, and give the places back; detached ones never held one
            server.terminate(box);
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> commands.running() == 0);
            String other = server.createSandbox();
            for (int i = 0; i < LIMIT; i++) {
                assertThat(Exec.start(server.channel, other, "sh", "-c", "sleep 600 >/dev/null 2>&1 </dev/null &")
                                .ended()
                                .getCode())
                        .isEqualTo(Status.Code.OK);
            }
            Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> commands.running() == 0);
        }
    }

    /**
     * One place for the environment: each command's place must be free by the time its client hears that it ended,
     * or the command the client starts on that answer is refused for a place no one needs any more.
     */
    @Test
    void aCommandStartedAsSoonAsTheLastEndedFindsItsPlaceFree(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.maxRunningCommands(2))) {
            String box = server.createSandbox();
            var oneShots = SandboxProcessServiceGrpc.newBlockingStub(server.channel);
            for (int i = 0; i < 100; i++) {
                assertThat(oneShots.withDeadlineAfter(30, TimeUnit.SECONDS)
                                .execCommand(ExecCommandRequest.newBuilder()
                                        .setSandboxId(box)
                                        .setCommand("true")
                                        .build())
                                .getExitCode())
                        .isZero();
                assertThat(Exec.start(server.channel, box, "true").ended().getCode())
                        .isEqualTo(Status.Code.OK);
            }
            Awaitility.await()
                    .atMost(Duration.ofSeconds(20))
                    .until(() -> server.server.runningCommands().running() == 0);
        }
    }

    @Test
    void aPlaceIsGivenBackOnceHoweverOftenItIsClosed() {
        RunningCommands commands = new RunningCommands(4);
        EnvironmentShares.Place a = commands.take("dev");
        commands.take("dev");
        assertThatThrownBy(() -> commands.take("dev")).hasMessageContaining("this environment runs 2");
        a.close();
        a.close();
        assertThat(commands.running()).isEqualTo(1);
        commands.take("dev");
        commands.take("prod");
        commands.take("prod");
        assertThatThrownBy(() -> commands.take("staging")).hasMessageContaining("the server runs 4");
    }

    private static String create(Channel channel) {
        return SandboxServiceGrpc.newBlockingStub(channel)
                .createSandbox(CreateSandboxRequest.getDefaultInstance())
                .getSandbox()
                .getId();
    }

    /** One Exec call, as a client without the SDK makes it. */
    private record Exec(
            StreamObserver<ExecRequest> requests, CompletableFuture<Void> started, CompletableFuture<Status> status) {

        static Exec start(Channel channel, String sandboxId, String command, String... args) {
            CompletableFuture<Void> started = new CompletableFuture<>();
            CompletableFuture<Status> status = new CompletableFuture<>();
            StreamObserver<ExecRequest> requests = SandboxServiceGrpc.newStub(channel)
                    .exec(new StreamObserver<>() {
                        @Override
                        public void onNext(ExecResponse r) {
                            if (r.hasProcessStarted()) {
                                started.complete(null);
                            }
                        }

                        @Override
                        public void onError(Throwable t) {
                            status.complete(Status.fromThrowable(t));
                        }

                        @Override
                        public void onCompleted() {
                            status.complete(Status.OK);
                        }
                    });
            requests.onNext(ExecRequest.newBuilder()
                    .setInit(ExecInit.newBuilder()
                            .setSandboxId(sandboxId)
                            .setCommand(command)
                            .addAllArgs(List.of(args)))
                    .build());
            return new Exec(requests, started, status);
        }

        /** This exec, once its process runs. */
        Exec running() throws Exception {
            CompletableFuture.anyOf(started, status).get(30, TimeUnit.SECONDS);
            assertThat(started)
                    .as("started, not ended with %s", status.getNow(null))
                    .isDone();
            return this;
        }

        /** How the call ended (a command that was started is left to end on its own). */
        Status ended() throws Exception {
            requests.onCompleted();
            return status.get(30, TimeUnit.SECONDS);
        }

        /** Goes away, which kills the command. */
        void cancel() {
            if (!status.isDone()) {
                requests.onError(Status.CANCELLED.asRuntimeException());
            }
        }
    }

    /** The live threads the server names ({@code chalk-...}). */
    private static long serverThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("chalk-"))
                .count();
    }
}
