package ai.chalk.compute.server.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.NetworkPolicy;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRule;
import ai.chalk.compute.proto.container.v1.NetworkPolicyRuleList;
import ai.chalk.compute.proto.container.v1.NetworkTransformer;
import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.BuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.VolumeMount;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotServiceGrpc;
import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.EnvironmentSecretsServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetEnvRequest;
import ai.chalk.compute.proto.server.v1.GetTokenRequest;
import ai.chalk.compute.proto.server.v1.TeamServiceGrpc;
import ai.chalk.compute.proto.server.v1.UpsertSecretRequest;
import ai.chalk.compute.proto.volume.v1.CreateVolumeRequest;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.auth.WorkloadTokens;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Deployed code talks to the server through the socket bound into its replicas. Acting as that code: it must not
 * see, exec in or terminate another tenant's sandbox, nor change what is deployed; it may still create a sandbox
 * and use it, as a function does.
 */
class WorkerSocketSecurityTest {

    @Test
    void deployedCodeReachesOnlyTheSandboxesItCreated(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            String tenants = server.createSandbox(); // another tenant's, created over TCP
            EpollEventLoopGroup group = new EpollEventLoopGroup(1);
            // deployed code shows the token the server rotates in its identity directory; this one is a dev function's
            Path identity = server.server
                    .authentication()
                    .workloads()
                    .issue("socket-test", new Caller("dev", "function:socket-test/v1", Caller.Kind.WORKLOAD));
            AtomicReference<String> token = new AtomicReference<>();
            ManagedChannel worker = workerChannel(dataDir, group, token);
            try {
                // without a token, nothing but health; the token exchange neither: a client's token is not taken here
                assertThat(code(() -> SandboxServiceGrpc.newBlockingStub(worker)
                                .withDeadlineAfter(60, TimeUnit.SECONDS)
                                .createSandbox(CreateSandboxRequest.getDefaultInstance())))
                        .isEqualTo(Status.Code.UNAUTHENTICATED);
                assertThat(code(() -> AuthServiceGrpc.newBlockingStub(worker)
                                .withDeadlineAfter(60, TimeUnit.SECONDS)
                                .getToken(GetTokenRequest.newBuilder()
                                        .setClientId("any")
                                        .setClientSecret("wrong")
                                        .build())))
                        .isEqualTo(Status.Code.PERMISSION_DENIED);
                token.set(Files.readString(identity.resolve(WorkloadTokens.FILE_NAME)));
                var sandboxes = SandboxServiceGrpc.newBlockingStub(worker).withDeadlineAfter(60, TimeUnit.SECONDS);
                var processes =
                        SandboxProcessServiceGrpc.newBlockingStub(worker).withDeadlineAfter(60, TimeUnit.SECONDS);
                assertThatThrownBy(() -> sandboxes.listSandboxes(ListSandboxesRequest.getDefaultInstance()))
                        .isInstanceOf(StatusRuntimeException.class)
                        .satisfies(e ->
                                assertThat(Status.fromThrowable(e).getCode()).isEqualTo(Status.Code.PERMISSION_DENIED));
                assertThat(code(() -> sandboxes.getSandbox(GetSandboxRequest.newBuilder()
                                .setSandboxId(tenants)
                                .build())))
                        .isEqualTo(Status.Code.NOT_FOUND);
                assertThat(code(() -> processes.execCommand(ExecCommandRequest.newBuilder()
                                .setSandboxId(tenants)
                                .setCommand("id")
                                .build())))
                        .isEqualTo(Status.Code.NOT_FOUND);
                assertThat(code(() -> sandboxes.terminateSandbox(TerminateSandboxRequest.newBuilder()
                                .setSandboxId(tenants)
                                .build())))
                        .isEqualTo(Status.Code.NOT_FOUND);
                assertThat(code(() -> ExternalFunctionCatalogServiceGrpc.newBlockingStub(worker)
                                .deleteExternalFunction(DeleteExternalFunctionRequest.getDefaultInstance())))
                        .isEqualTo(Status.Code.PERMISSION_DENIED);

                // what a function does: create a sandbox and use it, in its function's environment
                String own = sandboxes
                        .createSandbox(CreateSandboxRequest.getDefaultInstance())
                        .getSandbox()
                        .getId();
                assertThat(processes
                                .execCommand(ExecCommandRequest.newBuilder()
                                        .setSandboxId(own)
                                        .setCommand("echo")
                                        .addArgs("mine")
                                        .build())
                                .getStdout()
                                .toStringUtf8())
                        .isEqualTo("mine\n");
                assertThat(code(() -> server.sandboxes()
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setSandboxId(own)
                                        .build())))
                        .as("default does not see the dev function's sandbox")
                        .isEqualTo(Status.Code.NOT_FOUND);
                ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
                assertThat(SandboxServiceGrpc.newBlockingStub(dev)
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setSandboxId(own)
                                        .build())
                                .getSandbox()
                                .getId())
                        .isEqualTo(own);
                dev.shutdownNow();
                sandboxes.terminateSandbox(
                        TerminateSandboxRequest.newBuilder().setSandboxId(own).build());
                // an ended sandbox is still answered for a while: the function may ask how it ended
                assertThat(sandboxes
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setSandboxId(own)
                                        .setIncludeTerminated(true)
                                        .build())
                                .getSandbox()
                                .getState())
                        .isEqualTo("TERMINATED");
                // the other tenant's sandbox is untouched
                assertThat(server.sandboxes()
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setSandboxId(tenants)
                                        .build())
                                .getSandbox()
                                .getState())
                        .isEqualTo("RUNNING");
            } finally {
                end(server, group, List.of("socket-test"), worker);
            }
        }
    }

    @Test
    void aSandboxDeployedCodeCreatesGetsNoSecretsOfItsEnvironment(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ManagedChannel developer = RunningServer.authenticated(server.server, "dev");
            EnvironmentSecretsServiceGrpc.newBlockingStub(developer)
                    .withDeadlineAfter(30, TimeUnit.SECONDS)
                    .upsertSecret(UpsertSecretRequest.newBuilder()
                            .setName("API_KEY")
                            .setValue("secret-value")
                            .build());
            // a developer's sandbox that holds the secret, and its snapshot
            String holder = createV2(
                    developer,
                    ChalkContainerSpec.newBuilder()
                            .addSecretRefs(SecretRef.newBuilder().setSecretName("API_KEY"))
                            .build());
            RunningServer.sh(developer, holder, "echo \"$API_KEY\" > /tmp/key");
            String developersSnapshot = snapshotOf(developer, holder);

            EpollEventLoopGroup group = new EpollEventLoopGroup(1);
            ManagedChannel worker = workloadChannel(server, dataDir, group, "secrets-test", "function:secrets-test/v1");
            try {
                var sandboxes = ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.newBlockingStub(worker)
                        .withDeadlineAfter(60, TimeUnit.SECONDS);
                // the secrets services refuse deployed code; a sandbox of its own must not be the way round
                assertThatThrownBy(() -> sandboxes.createSandbox(
                                ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest.newBuilder()
                                        .setSpec(ChalkContainerSpec.newBuilder()
                                                .addSecretRefs(
                                                        SecretRef.newBuilder().setSecretName("API_KEY")))
                                        .build()))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
                            assertThat(e.getStatus().getDescription()).contains("secret_refs");
                        });
                NetworkPolicy headerSecret = NetworkPolicy.newBuilder()
                        .putAllowedHosts(
                                "api.example.com",
                                NetworkPolicyRuleList.newBuilder()
                                        .addRules(NetworkPolicyRule.newBuilder()
                                                .addTransform(NetworkTransformer.newBuilder()
                                                        .putHeadersSecrets("Authorization", "API_KEY")))
                                        .build())
                        .build();
                assertThatThrownBy(() -> sandboxes.createSandbox(
                                ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest.newBuilder()
                                        .setSpec(ChalkContainerSpec.newBuilder().setNetworkPolicy(headerSecret))
                                        .build()))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED));
                assertThat(code(() -> sandboxes.createSandbox(
                                ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest.newBuilder()
                                        .setSnapshotId(developersSnapshot)
                                        .build())))
                        .as("a snapshot not taken through the socket")
                        .isEqualTo(Status.Code.NOT_FOUND);

                // a sandbox of its own, and a snapshot of it, it may still use
                String own = createV2(worker, ChalkContainerSpec.getDefaultInstance());
                String ownSnapshot = snapshotOf(worker, own);
                String restored = sandboxes
                        .createSandbox(ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest.newBuilder()
                                .setSnapshotId(ownSnapshot)
                                .build())
                        .getSandbox()
                        .getId();
                assertThat(out(worker, restored, "echo \"key=$API_KEY\"; cat /tmp/key 2>/dev/null || true"))
                        .isEqualTo("key=\n");
            } finally {
                end(server, group, List.of("secrets-test"), worker, developer);
            }
        }
    }

    @Test
    void deployedCodeNamesNoImageForItsEnvironmentAndOnlyReadsItsVolumes(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ManagedChannel developer = RunningServer.authenticated(server.server, "dev");
            VolumeServiceGrpc.newBlockingStub(developer)
                    .withDeadlineAfter(30, TimeUnit.SECONDS)
                    .createVolume(
                            CreateVolumeRequest.newBuilder().setName("shared").build());
            CreateSandboxRequest mountsShared = CreateSandboxRequest.newBuilder()
                    .addVolumes(VolumeMount.newBuilder().setName("shared").setMountPath("/data"))
                    .build();
            var developers = SandboxServiceGrpc.newBlockingStub(developer).withDeadlineAfter(60, TimeUnit.SECONDS);
            String developersSandbox =
                    developers.createSandbox(mountsShared).getSandbox().getId();
            RunningServer.sh(developer, developersSandbox, "echo 'run by the developers' > /data/script");

            EpollEventLoopGroup group = new EpollEventLoopGroup(1);
            ManagedChannel worker = workloadChannel(server, dataDir, group, "tags-test", "function:tags-test/v1");
            try {
                // a tag is the environment's name for an image: the developers' sandboxes naming it would run this
                assertThatThrownBy(() -> CustomImageServiceGrpc.newBlockingStub(worker)
                                .withDeadlineAfter(30, TimeUnit.SECONDS)
                                .buildCustomImage(BuildCustomImageRequest.newBuilder()
                                        .setImageSpec(ImageSpec.newBuilder()
                                                .setBaseImage("debian:bookworm-slim")
                                                .addSteps(BuildStep.newBuilder()
                                                        .setRunCommands(RunCommandsStep.newBuilder()
                                                                .addCommands("echo planted > /tagged-by"))))
                                        .setTag("python:3.12-slim")
                                        .build()))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
                            assertThat(e.getStatus().getDescription()).contains("tag");
                        });

                // its own sandbox mounts the volume read-only: what the developers' code reads stays theirs
                String own = SandboxServiceGrpc.newBlockingStub(worker)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .createSandbox(mountsShared)
                        .getSandbox()
                        .getId();
                var write = RunningServer.sh(
                        worker,
                        own,
                        "cat /data/script; if echo planted > /data/script; then echo wrote; else echo refused; fi");
                assertThat(write.getStdout().toStringUtf8()).isEqualTo("run by the developers\nrefused\n");
                assertThat(out(developer, developersSandbox, "cat /data/script"))
                        .isEqualTo("run by the developers\n");
                // the developers' sandboxes still write it
                assertThat(out(developer, developersSandbox, "echo v2 > /data/script && cat /data/script"))
                        .isEqualTo("v2\n");
            } finally {
                end(server, group, List.of("tags-test"), worker, developer);
            }
        }
    }

    @Test
    void aWorkloadsTokenStopsWorkingWhenTheWorkloadEnds(@TempDir Path dataDir) throws Exception {
        // the socket is reached from every replica of every environment: a token read from a workload that ended (a
        // terminated sandbox running untrusted input, say) acted in its environment until it expired, an hour later
        try (RunningServer server = RunningServer.start(dataDir)) {
            EpollEventLoopGroup group = new EpollEventLoopGroup(1);
            ManagedChannel worker = workloadChannel(server, dataDir, group, "ended-test", "sandbox:ended-test");
            try {
                var team = TeamServiceGrpc.newBlockingStub(worker).withDeadlineAfter(30, TimeUnit.SECONDS);
                assertThat(code(() -> team.getEnv(GetEnvRequest.getDefaultInstance())))
                        .isEqualTo(Status.Code.OK);
                server.server.authentication().workloads().release("ended-test");
                assertThatThrownBy(() -> team.getEnv(GetEnvRequest.getDefaultInstance()))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
                            assertThat(e.getStatus().getDescription()).contains("sandbox:ended-test", "has ended");
                        });
            } finally {
                end(server, group, List.of(), worker);
            }
        }
    }

    @Test
    void aWorkloadReachesNoSandboxAnotherWorkloadOfItsEnvironmentCreated(@TempDir Path dataDir) throws Exception {
        // a sandbox given a workload identity (running untrusted code, say) reached the sandboxes a function of its
        // environment had made, and what the function passed them
        try (RunningServer server = RunningServer.start(dataDir)) {
            EpollEventLoopGroup group = new EpollEventLoopGroup(1);
            ManagedChannel owner = workloadChannel(server, dataDir, group, "fn-test", "function:owner/v1");
            ManagedChannel intruder = workloadChannel(server, dataDir, group, "sb-test", "sandbox:sb-test");
            try {
                String own = createV2(owner, ChalkContainerSpec.getDefaultInstance());
                assertThat(out(owner, own, "echo mine")).isEqualTo("mine\n");
                assertThat(code(() -> RunningServer.sh(intruder, own, "echo reached")))
                        .isEqualTo(Status.Code.NOT_FOUND);
                assertThat(code(() -> snapshotOf(intruder, own))).isEqualTo(Status.Code.NOT_FOUND);
            } finally {
                end(server, group, List.of("fn-test", "sb-test"), owner, intruder);
            }
        }
    }

    /** What {@code script} writes to stdout in {@code sandbox}, run over {@code channel}. */
    private static String out(io.grpc.Channel channel, String sandbox, String script) {
        return RunningServer.sh(channel, sandbox, script).getStdout().toStringUtf8();
    }

    /** Closes {@code channels}, releases the workloads {@code keys} and stops {@code group}. */
    private static void end(
            RunningServer server, EpollEventLoopGroup group, List<String> keys, ManagedChannel... channels)
            throws InterruptedException {
        for (ManagedChannel c : channels) {
            c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        keys.forEach(server.server.authentication().workloads()::release);
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }

    /**
     * A channel over the socket as workload {@code key} of environment dev, acting as {@code subject}, has it: its
     * identity issued (release it with {@code key}) and its token sent.
     */
    private static ManagedChannel workloadChannel(
            RunningServer server, Path dataDir, EpollEventLoopGroup group, String key, String subject)
            throws java.io.IOException {
        Path identity =
                server.server.authentication().workloads().issue(key, new Caller("dev", subject, Caller.Kind.WORKLOAD));
        return workerChannel(
                dataDir, group, new AtomicReference<>(Files.readString(identity.resolve(WorkloadTokens.FILE_NAME))));
    }

    /** A channel over the socket bound into replicas, as deployed code has, sending {@code token} once it is set. */
    private static ManagedChannel workerChannel(
            Path dataDir, EpollEventLoopGroup group, AtomicReference<String> token) {
        Path socket = dataDir.resolve("functions/server").resolve(WorkerLaunch.SERVER_SOCKET_NAME);
        return NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollDomainSocketChannel.class)
                .eventLoopGroup(group)
                .usePlaintext()
                .intercept(RunningServer.bearer(token))
                .build();
    }

    /** Creates a sandbox of {@code spec} through v2 over {@code channel}; its id. */
    private static String createV2(ManagedChannel channel, ChalkContainerSpec spec) {
        return ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .createSandbox(ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest.newBuilder()
                        .setSpec(spec)
                        .build())
                .getSandbox()
                .getId();
    }

    /** Takes a snapshot of {@code sandbox} over {@code channel}; its id. */
    private static String snapshotOf(ManagedChannel channel, String sandbox) {
        return SandboxSnapshotServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .createSandboxSnapshot(CreateSandboxSnapshotRequest.newBuilder()
                        .setSandboxId(sandbox)
                        .build())
                .getSnapshot()
                .getId();
    }

    private static Status.Code code(Runnable call) {
        try {
            call.run();
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }
}
