package ai.chalk.compute.server.secret;

import static ai.chalk.compute.server.secret.SecretServiceTest.admin;
import static ai.chalk.compute.server.secret.SecretServiceTest.secrets;
import static ai.chalk.compute.server.secret.SecretServiceTest.status;
import static ai.chalk.compute.server.secret.SecretServiceTest.upsert;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.proto.integrations.v1.PutIntegrationRequest;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.proto.scalinggroup.v1.CreateScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.DeleteScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.RunningServer;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.Channel;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Secrets reaching sandboxes through ChalkContainerSpec.secret_refs, over TCP: the processes see them as environment
 * variables, and nothing else does. Every value used is checked against every response, every error and every log
 * line of the class's run, and against the database file at the end.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SecretInjectionTest {

    @TempDir
    static Path dataDir;

    private RunningServer server;
    private Channel dev;
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final String token = "token-" + UUID.randomUUID();
    private final String pgUser = "pguser-" + UUID.randomUUID();
    private final String pgPassword = "pgpassword-" + UUID.randomUUID();
    private final String prodToken = "prod-token-" + UUID.randomUUID();
    /** Every response and error message of the run, checked for values at the end. */
    private final List<String> seen = new ArrayList<>();

    @BeforeAll
    void start() throws Exception {
        logs.start();
        root().addAppender(logs);
        server = RunningServer.start(dataDir);
        dev = RunningServer.authenticated(server.server, "dev"); // over TCP a credential of dev
        secrets(dev).upsertSecret(upsert("TOKEN", token));
        secrets(RunningServer.authenticated(server.server, "prod")).upsertSecret(upsert("PROD_ONLY", prodToken));
        admin(dev)
                .putIntegration(PutIntegrationRequest.newBuilder()
                        .setName("pg")
                        .putValues("PGUSER", pgUser)
                        .putValues("PGPASSWORD", pgPassword)
                        .build());
    }

    @AfterAll
    void stop() throws Exception {
        try {
            server.close();
            List<String> lines = new ArrayList<>();
            for (ILoggingEvent e : logs.list) {
                lines.add(e.getFormattedMessage());
                if (e.getThrowableProxy() != null) {
                    lines.add(ThrowableProxyUtil.asString(e.getThrowableProxy()));
                }
            }
            assertThat(lines).as("log lines of the run").isNotEmpty();
            for (String value : List.of(token, pgUser, pgPassword, prodToken)) {
                assertThat(lines).as("log lines").noneMatch(l -> l.contains(value));
                assertThat(seen).as("responses and errors").noneMatch(l -> l.contains(value));
            }
            // the sandbox records (and everything else in the database) keep references, not values
            try (var files = Files.walk(dataDir.resolve("state"))) {
                for (Path f : files.filter(Files::isRegularFile).toList()) {
                    String raw = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
                    for (String value : List.of(token, pgUser, pgPassword, prodToken)) {
                        assertThat(raw).as(f.toString()).doesNotContain(value);
                    }
                }
            }
        } finally {
            root().detachAppender(logs);
        }
    }

    private static ch.qos.logback.classic.Logger root() {
        return (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("ROOT");
    }

    private SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes(Channel c) {
        return SandboxServiceGrpc.newBlockingStub(c).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private String env(Channel c, String sandboxId) {
        var r = SandboxProcessServiceGrpc.newBlockingStub(c)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(sandboxId)
                        .setCommand("env")
                        .build());
        assertThat(r.getExitCode()).isZero();
        return r.getStdout().toStringUtf8();
    }

    private Status failure(java.util.function.Supplier<?> call) {
        Status s = status(call);
        seen.add(String.valueOf(s.getDescription()));
        return s;
    }

    @Test
    void secretsAndIntegrationKeysBecomeTheProcessesEnvironmentAndNothingElseShowsThem() {
        ChalkContainerSpec spec = ChalkContainerSpec.newBuilder()
                .setName("with-secrets")
                .putEnvVars("PLAIN", "literal")
                .addSecretRefs(SecretRef.newBuilder().setSecretName("TOKEN"))
                .addSecretRefs(SecretRef.newBuilder().setSecretName("TOKEN").putAliases("TOKEN", "API_TOKEN"))
                .addSecretRefs(SecretRef.newBuilder()
                        .setIntegrationName("pg")
                        .addKeys("PGPASSWORD")
                        .putAliases("PGPASSWORD", "DB_PASS"))
                .addSecretRefs(SecretRef.newBuilder().setIntegrationName("pg").setPrefix("PG_"))
                .build();
        SandboxInfo created = sandboxes(dev)
                .createSandbox(CreateSandboxRequest.newBuilder().setSpec(spec).build())
                .getSandbox();
        seen.add(created.toString());
        try {
            String env = env(dev, created.getId());
            assertThat(env)
                    .contains(
                            "PLAIN=literal\n",
                            "TOKEN=" + token + "\n",
                            "API_TOKEN=" + token + "\n",
                            "DB_PASS=" + pgPassword + "\n",
                            "PG_PGPASSWORD=" + pgPassword + "\n",
                            "PG_PGUSER=" + pgUser + "\n");
            assertThat(env).doesNotContain("\nPGPASSWORD=").doesNotContain("\nPGUSER=");

            // the spec echoed shows the references as given
            assertThat(created.getSpec().getSecretRefsList()).isEqualTo(spec.getSecretRefsList());
            SandboxInfo got = sandboxes(dev)
                    .getSandbox(GetSandboxRequest.newBuilder()
                            .setId(created.getId())
                            .build())
                    .getSandbox();
            assertThat(got.getSpec()).isEqualTo(spec);
            seen.add(got.toString());
            seen.add(sandboxes(dev)
                    .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                    .toString());
            var v1 = ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc.newBlockingStub(dev)
                    .withDeadlineAfter(60, TimeUnit.SECONDS);
            seen.add(v1.getSandbox(ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest.newBuilder()
                            .setSandboxId(created.getId())
                            .build())
                    .toString());
            seen.add(v1.listSandboxes(ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest.getDefaultInstance())
                    .toString());
        } finally {
            sandboxes(dev)
                    .terminateSandbox(TerminateSandboxRequest.newBuilder()
                            .setId(created.getId())
                            .build());
        }
    }

    @Test
    void aMissingSecretIsAFailedPreconditionNamingItAndAnotherEnvironmentsSecretIsMissing() {
        Status missing = failure(() -> sandboxes(dev)
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSpec(ChalkContainerSpec.newBuilder()
                                .addSecretRefs(SecretRef.newBuilder().setSecretName("NOT_THERE")))
                        .build()));
        assertThat(missing.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(missing.getDescription()).contains("secret_refs[0]", "secret NOT_THERE does not exist");
        Status foreign = failure(() -> sandboxes(dev)
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSpec(ChalkContainerSpec.newBuilder()
                                .addSecretRefs(SecretRef.newBuilder().setSecretName("PROD_ONLY")))
                        .build()));
        assertThat(foreign.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(foreign.getDescription()).isEqualTo(missing.getDescription().replace("NOT_THERE", "PROD_ONLY"));
        Status noKey = failure(() -> sandboxes(dev)
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSpec(ChalkContainerSpec.newBuilder()
                                .addSecretRefs(SecretRef.newBuilder()
                                        .setIntegrationName("pg")
                                        .addKeys("PGHOST")))
                        .build()));
        assertThat(noKey.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(noKey.getDescription()).contains("integration pg has no key PGHOST", "PGPASSWORD, PGUSER");
    }

    @Test
    void referencesThatClashOrMisnameAreInvalidArgumentsThatNameVariablesNotValues() {
        Status clash = failure(() -> sandboxes(dev)
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSpec(ChalkContainerSpec.newBuilder()
                                .putEnvVars("TOKEN", "literal")
                                .addSecretRefs(SecretRef.newBuilder().setSecretName("TOKEN")))
                        .build()));
        assertThat(clash.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(clash.getDescription()).contains("env_vars sets TOKEN, which secret_refs sets too");
        Status twice = failure(() -> sandboxes(dev)
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSpec(ChalkContainerSpec.newBuilder()
                                .addSecretRefs(SecretRef.newBuilder().setSecretName("TOKEN"))
                                .addSecretRefs(SecretRef.newBuilder().setSecretName("TOKEN")))
                        .build()));
        assertThat(twice.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(twice.getDescription()).contains("secret_refs[1] sets environment variable TOKEN");
        Status alias = failure(() -> sandboxes(dev)
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSpec(ChalkContainerSpec.newBuilder()
                                .addSecretRefs(SecretRef.newBuilder()
                                        .setSecretName("TOKEN")
                                        .putAliases("TOKEN", "1BAD")))
                        .build()));
        assertThat(alias.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        Status stray = failure(() -> sandboxes(dev)
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSpec(ChalkContainerSpec.newBuilder()
                                .addSecretRefs(SecretRef.newBuilder()
                                        .setSecretName("TOKEN")
                                        .putAliases("OTHER", "X")))
                        .build()));
        assertThat(stray.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(stray.getDescription()).contains("aliases renames OTHER");
    }

    @Test
    void replicasOfAScalingGroupGetTheSecretsAsTheyStart() {
        var groups = ScalingGroupManagerServiceGrpc.newBlockingStub(dev).withDeadlineAfter(60, TimeUnit.SECONDS);
        ChalkContainerSpec container = ChalkContainerSpec.newBuilder()
                .setName("secret-replicas")
                .addEntrypoint("sleep")
                .addEntrypoint("600")
                .addSecretRefs(SecretRef.newBuilder().setSecretName("TOKEN").putAliases("TOKEN", "REPLICA_TOKEN"))
                .build();
        var created = groups.createScalingGroup(CreateScalingGroupRequest.newBuilder()
                        .setSpec(ScalingGroupSpec.newBuilder()
                                .setContainerSpec(container)
                                .setScalingSpec(ScalingSpec.newBuilder()
                                        .setMinReplicas(1)
                                        .setMaxReplicas(1)))
                        .build())
                .getScalingGroup();
        seen.add(created.toString());
        try {
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> groups.getScalingGroup(GetScalingGroupRequest.newBuilder()
                                    .setName("secret-replicas")
                                    .build())
                            .getScalingGroup()
                            .getStatus()
                            .equals("ready"));
            SandboxInfo replica =
                    sandboxes(dev).listSandboxes(ListSandboxesRequest.getDefaultInstance()).getSandboxesList().stream()
                            .filter(s -> s.getSpec().getName().equals("secret-replicas")
                                    && s.getStatus().name().contains("RUNNING"))
                            .findFirst()
                            .orElseThrow();
            seen.add(replica.toString());
            assertThat(env(dev, replica.getId())).contains("REPLICA_TOKEN=" + token + "\n");
        } finally {
            groups.deleteScalingGroup(DeleteScalingGroupRequest.newBuilder()
                    .setName("secret-replicas")
                    .build());
        }
    }
}
