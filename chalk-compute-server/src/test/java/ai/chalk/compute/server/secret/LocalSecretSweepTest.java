package ai.chalk.compute.server.secret;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.DeleteSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotStatus;
import ai.chalk.compute.proto.sandbox.v2.SandboxStatus;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.proto.scalinggroup.v1.CreateScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.DeleteScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.proto.scalinggroup.v1.UpdateScalingGroupRequest;
import ai.chalk.compute.proto.server.v1.EnvironmentSecretsServiceGrpc;
import ai.chalk.compute.proto.server.v1.ListSecretsRequest;
import ai.chalk.compute.proto.server.v1.UpsertSecretRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.function.TestCode;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * The server's sweep of the secrets the SDK saves for local values ({@code CHALK_LOCAL_<VARIABLE>_<random>}), over
 * TCP with real sandboxes, functions and scaling groups, each workload created the way the SDK creates it: the secret
 * saved first, then referenced by name. The grace for abandoned uploads is an hour here, so every secret that goes is
 * one whose workload ended or was deleted, and goes at once; {@link LocalSecretGraceTest} covers the grace.
 *
 * <p>That a secret stays is checked after a sweep known to have run since: a sentinel secret, used by a sandbox that
 * is then terminated, is swept by the same pass over the environment.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LocalSecretSweepTest {

    private static final Duration SWEPT_WITHIN = Duration.ofSeconds(30);

    @TempDir
    static Path dataDir;

    private RunningServer server;
    private ManagedChannel dev;
    private ManagedChannel prod;
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    /** Every value saved, none of which may reach a log line. */
    private final List<String> values = new ArrayList<>();

    @BeforeAll
    void start() throws Exception {
        logs.start();
        sweepLogger().addAppender(logs);
        server = RunningServer.start(
                dataDir, b -> b.localSecretGrace(Duration.ofHours(1)).localSecretSweepInterval(Duration.ofHours(1)));
        dev = RunningServer.authenticated(server.server, "dev");
        prod = RunningServer.authenticated(server.server, "prod");
    }

    @AfterAll
    void stop() throws Exception {
        try {
            dev.shutdownNow();
            prod.shutdownNow();
            server.close();
            List<String> lines =
                    logs.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
            for (String value : values) {
                assertThat(lines).noneMatch(l -> l.contains(value));
            }
        } finally {
            sweepLogger().detachAppender(logs);
        }
    }

    private static ch.qos.logback.classic.Logger sweepLogger() {
        return (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(LocalSecretSweep.class);
    }

    // ---- the SDK's side: save, reference

    /** A name as the SDK gives a local value's secret. */
    static String localName(String variable) {
        byte[] random = new byte[6];
        new SecureRandom().nextBytes(random);
        return "CHALK_LOCAL_" + variable + "_" + HexFormat.of().formatHex(random);
    }

    /** Saves a secret with a fresh value and returns the value. */
    String save(Channel c, String name) {
        String value = "value-of-" + name + "-" + UUID.randomUUID();
        values.add(value);
        EnvironmentSecretsServiceGrpc.newBlockingStub(c)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .upsertSecret(UpsertSecretRequest.newBuilder()
                        .setName(name)
                        .setValue(value)
                        .build());
        return value;
    }

    /** The reference the SDK sends for a local value saved as {@code name}, under the variable {@code variable}. */
    static SecretRef ref(String name, String variable) {
        return SecretRef.newBuilder()
                .setSecretName(name)
                .putAliases(name, variable)
                .build();
    }

    static Set<String> secretNames(Channel c) {
        return EnvironmentSecretsServiceGrpc.newBlockingStub(c)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .listSecrets(ListSecretsRequest.getDefaultInstance())
                .getSecretsList()
                .stream()
                .map(s -> s.getName())
                .collect(Collectors.toSet());
    }

    static void awaitGone(Channel c, String... names) {
        await().atMost(SWEPT_WITHIN)
                .untilAsserted(() -> assertThat(secretNames(c)).doesNotContainAnyElementsOf(List.of(names)));
    }

    static SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes(Channel c) {
        return SandboxServiceGrpc.newBlockingStub(c).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    static String createSandbox(Channel c, ChalkContainerSpec spec) {
        return sandboxes(c)
                .createSandbox(CreateSandboxRequest.newBuilder().setSpec(spec).build())
                .getSandbox()
                .getId();
    }

    static void terminate(Channel c, String id) {
        sandboxes(c)
                .terminateSandbox(TerminateSandboxRequest.newBuilder().setId(id).build());
    }

    static String env(Channel c, String sandboxId) {
        return SandboxProcessServiceGrpc.newBlockingStub(c)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(sandboxId)
                        .setCommand("env")
                        .build())
                .getStdout()
                .toStringUtf8();
    }

    /**
     * Returns once a sweep of the environment has run after this call began: a sentinel secret used by a sandbox that
     * is then terminated is gone, and one pass sweeps all of an environment's secrets.
     */
    void awaitSweep(Channel c) {
        String sentinel = localName("SENTINEL");
        save(c, sentinel);
        String id = createSandbox(
                c,
                ChalkContainerSpec.newBuilder()
                        .addSecretRefs(ref(sentinel, "S"))
                        .build());
        terminate(c, id);
        awaitGone(c, sentinel);
    }

    // ---- sandboxes

    @Test
    void aSandboxThatEndsByItselfLeavesNoSecretOfALocalValueBehindAndTheLogNamesItNotItsValue() {
        String name = localName("API_KEY");
        String value = save(dev, name);
        String id = createSandbox(
                dev,
                ChalkContainerSpec.newBuilder()
                        .setLifetime(com.google.protobuf.Duration.newBuilder().setSeconds(3))
                        .addSecretRefs(ref(name, "API_KEY"))
                        .build());
        assertThat(env(dev, id)).contains("API_KEY=" + value + "\n");

        awaitGone(dev, name); // the server ends it when its lifetime runs out; nobody terminates it
        assertThat(sandboxes(dev)
                        .getSandbox(GetSandboxRequest.newBuilder().setId(id).build())
                        .getSandbox()
                        .getStatus())
                .isEqualTo(SandboxStatus.SANDBOX_STATUS_TERMINATED);
        assertThat(logs.list)
                .map(ILoggingEvent::getFormattedMessage)
                .anyMatch(l -> l.contains("Secret " + name + " of environment dev")
                        && l.contains("saved by the SDK for a local value, deleted"));
    }

    @Test
    void aSandboxKeepsItsSecretsWhileItRunsAndLosesThemWhenAnotherClientTerminatesIt() {
        String name = localName("TOKEN");
        save(dev, name);
        String id = createSandbox(
                dev,
                ChalkContainerSpec.newBuilder()
                        .addSecretRefs(ref(name, "TOKEN"))
                        .build());
        awaitSweep(dev);
        assertThat(secretNames(dev)).contains(name);

        ManagedChannel otherClient = RunningServer.authenticated(server.server, "dev"); // not the one that saved it
        try {
            terminate(otherClient, id);
        } finally {
            otherClient.shutdownNow();
        }
        awaitGone(dev, name);
    }

    @Test
    void aSnapshotKeepsTheSecretsOfItsSandboxUntilItIsDeleted() {
        String name = localName("SNAP");
        save(dev, name);
        String id = createSandbox(
                dev,
                ChalkContainerSpec.newBuilder().addSecretRefs(ref(name, "SNAP")).build());
        var snapshots = SandboxSnapshotServiceGrpc.newBlockingStub(dev).withDeadlineAfter(60, TimeUnit.SECONDS);
        String snapshot = snapshots
                .createSandboxSnapshot(CreateSandboxSnapshotRequest.newBuilder()
                        .setSandboxId(id)
                        .build())
                .getSnapshot()
                .getId();
        await().atMost(Duration.ofSeconds(60))
                .until(() -> snapshots
                        .getSandboxSnapshot(GetSandboxSnapshotRequest.newBuilder()
                                .setSnapshotId(snapshot)
                                .build())
                        .getSnapshot()
                        .getStatus()
                        .equals(SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_COMPLETED));
        terminate(dev, id);
        awaitSweep(dev);
        assertThat(secretNames(dev))
                .as("a sandbox restored from the snapshot reads it")
                .contains(name);

        snapshots.deleteSandboxSnapshot(DeleteSandboxSnapshotRequest.newBuilder()
                .setSnapshotId(snapshot)
                .build());
        awaitGone(dev, name);
    }

    // ---- functions and scaling groups

    @Test
    void aFunctionKeepsTheSecretsOfEveryVersionThatExistsAndLosesThemWithTheVersionOrTheFunction() throws Exception {
        var catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(dev).withDeadlineAfter(90, TimeUnit.SECONDS);
        TestCode code = new TestCode("sweep", false);
        code.upload(dev);
        String first = localName("FN_KEY");
        String second = localName("FN_KEY");
        save(dev, first);
        String v1 = catalog.createExternalFunctionVersion(deployment(code, first))
                .getExternalFunctionVersion()
                .getId();
        save(dev, second); // a redeploy saves the local value again, under a new name: a new version
        String v2 = catalog.createExternalFunctionVersion(deployment(code, second))
                .getExternalFunctionVersion()
                .getId();
        assertThat(v2).isNotEqualTo(v1);
        awaitSweep(dev);
        assertThat(secretNames(dev)).as("version 1 can be routed to again").contains(first, second);

        catalog.deleteExternalFunctionVersion(
                DeleteExternalFunctionVersionRequest.newBuilder().setId(v1).build());
        awaitGone(dev, first);
        assertThat(secretNames(dev)).contains(second);

        catalog.deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                .setFunctionName("swept-fn")
                .build());
        awaitGone(dev, second);
    }

    private static CreateExternalFunctionVersionRequest deployment(TestCode code, String secret) {
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName("swept-fn")
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(ChalkContainerSpec.newBuilder().addSecretRefs(ref(secret, "FN_KEY")))
                        .setScalingSpec(
                                ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(1)))
                .setConfig(FunctionConfig.newBuilder()
                        .putOptions("chalk_compute.code", code.manifestDigest)
                        .putOptions("chalk_compute.functions", "probe=t.W#probe")
                        .putOptions("chalk_compute.worker", "plain"))
                .build();
    }

    @Test
    void aScalingGroupKeepsTheSecretsOfAllItsRevisionsUntilItIsDeleted() {
        var groups = ScalingGroupManagerServiceGrpc.newBlockingStub(dev).withDeadlineAfter(60, TimeUnit.SECONDS);
        String first = localName("GROUP_KEY");
        String second = localName("GROUP_KEY");
        save(dev, first);
        String id = groups.createScalingGroup(CreateScalingGroupRequest.newBuilder()
                        .setSpec(groupSpec(first))
                        .build())
                .getScalingGroup()
                .getId();
        awaitReady(groups);
        save(dev, second);
        groups.updateScalingGroup(UpdateScalingGroupRequest.newBuilder()
                .setScalingGroupId(id)
                .setSpec(groupSpec(second))
                .build());
        awaitReady(groups); // the replica of the first revision has ended; the revision remains, for a rollback
        awaitSweep(dev);
        assertThat(secretNames(dev)).contains(first, second);

        groups.deleteScalingGroup(
                DeleteScalingGroupRequest.newBuilder().setName("swept-group").build());
        awaitGone(dev, first, second);
    }

    private static ScalingGroupSpec groupSpec(String secret) {
        return ScalingGroupSpec.newBuilder()
                .setContainerSpec(ChalkContainerSpec.newBuilder()
                        .setName("swept-group")
                        .addEntrypoint("sleep")
                        .addEntrypoint("600")
                        .addSecretRefs(ref(secret, "GROUP_KEY")))
                .setScalingSpec(ScalingSpec.newBuilder().setMinReplicas(1).setMaxReplicas(1))
                .build();
    }

    private static void awaitReady(ScalingGroupManagerServiceGrpc.ScalingGroupManagerServiceBlockingStub groups) {
        await().atMost(Duration.ofSeconds(60))
                .until(() -> groups.getScalingGroup(GetScalingGroupRequest.newBuilder()
                                .setName("swept-group")
                                .build())
                        .getScalingGroup()
                        .getStatus()
                        .equals("ready"));
    }

    // ---- environments and the user's own secrets

    @Test
    void aSecretOfTheSameNameInAnotherEnvironmentIsAnotherSecret() {
        String name = localName("SHARED");
        save(dev, name);
        save(prod, name);
        String devSandbox = createSandbox(
                dev,
                ChalkContainerSpec.newBuilder()
                        .addSecretRefs(ref(name, "SHARED"))
                        .build());
        String prodSandbox = createSandbox(
                prod,
                ChalkContainerSpec.newBuilder()
                        .addSecretRefs(ref(name, "SHARED"))
                        .build());

        terminate(dev, devSandbox);
        awaitGone(dev, name); // prod's running sandbox names a secret of prod, not this one
        awaitSweep(prod);
        assertThat(secretNames(prod)).contains(name);

        terminate(prod, prodSandbox);
        awaitGone(prod, name);
    }

    @Test
    void aUsersOwnSecretIsNeverSweptEvenWhenNothingReferencesIt() {
        save(dev, "OWN_API_KEY");
        save(dev, "CHALK_LOCALE"); // close to the prefix, but not under it
        String id = createSandbox(
                dev,
                ChalkContainerSpec.newBuilder()
                        .addSecretRefs(ref("OWN_API_KEY", "OWN_API_KEY"))
                        .addSecretRefs(ref("CHALK_LOCALE", "LOCALE"))
                        .build());
        terminate(dev, id);
        awaitSweep(dev);
        assertThat(secretNames(dev)).contains("OWN_API_KEY", "CHALK_LOCALE");
    }
}
