package ai.chalk.compute.secret;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.error.SecretNotFoundException;
import ai.chalk.compute.proto.integrations.v1.IntegrationAdminServiceGrpc;
import ai.chalk.compute.proto.integrations.v1.PutIntegrationRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxesRequest;
import ai.chalk.compute.proto.server.v1.IntegrationKind;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Secrets from the client's side against a real in-process server: the secrets client, and sandboxes receiving Chalk,
 * local and integration secrets as environment variables. Every value used here is checked, at the end, to appear in
 * no log line, no exception message and no {@code toString} of the run.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SecretSandboxTest {

    private static final String MANAGED = "managed-value-7f3a9c";
    private static final String LOCAL = "local-value-2b8e1d";
    private static final String FILE_VALUE = "file-value-5c0d4e";
    private static final String INTEGRATION = "integration-value-9a1f6b";

    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final List<String> seen = new ArrayList<>();
    private ComputeServer server;
    private SandboxClient client;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        logs.start();
        root().addAppender(logs);
        server = ComputeServer.builder().dataDir(dataDir).port(0).build().start();
        client = SandboxClient.inProcess(server.inProcessName());
    }

    @AfterAll
    void stop() {
        root().detachAppender(logs);
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
        List<String> lines = new ArrayList<>(seen);
        for (ILoggingEvent e : logs.list) {
            lines.add(e.getFormattedMessage());
            if (e.getThrowableProxy() != null) {
                lines.add(ch.qos.logback.classic.spi.ThrowableProxyUtil.asString(e.getThrowableProxy()));
            }
        }
        assertThat(lines)
                .isNotEmpty()
                .noneMatch(l ->
                        l.contains(MANAGED) || l.contains(LOCAL) || l.contains(FILE_VALUE) || l.contains(INTEGRATION));
    }

    private static ch.qos.logback.classic.Logger root() {
        return (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("ROOT");
    }

    @Test
    void theSecretsClientSetsListsReadsAndDeletesWithoutShowingValuesInLists() {
        SecretsClient secrets = client.secrets();
        SecretInfo saved = secrets.upsert("CRUD_SECRET", MANAGED);
        seen.add(saved.toString());
        seen.add(secrets.toString());
        assertThat(saved.name()).isEqualTo("CRUD_SECRET");
        assertThat(secrets.list()).extracting(SecretInfo::name).contains("CRUD_SECRET");
        assertThat(secrets.get("CRUD_SECRET")).isEqualTo(MANAGED);
        SecretInfo again = secrets.upsert("CRUD_SECRET", MANAGED + "-2");
        assertThat(again.updatedAt()).isAfterOrEqualTo(saved.updatedAt());
        secrets.delete("CRUD_SECRET");
        assertThatThrownBy(() -> secrets.get("CRUD_SECRET"))
                .isInstanceOf(SecretNotFoundException.class)
                .hasMessageContaining("CRUD_SECRET")
                .satisfies(e -> seen.add(e.toString()));
        assertThatThrownBy(() -> secrets.delete("CRUD_SECRET")).isInstanceOf(SecretNotFoundException.class);
    }

    @Test
    void aSandboxSeesAChalkSecretUnderTheVariableItIsBoundToAndTheServerEchoesOnlyTheReference() {
        client.secrets().upsert("MY_SECRET", MANAGED);
        Sandbox sandbox = client.create(Sandbox.builder()
                .env("PLAIN", "literal")
                .env("API_KEY", Secret.fromChalkEnv("MY_SECRET"))
                .build());
        try {
            seen.add(sandbox.toString());
            assertThat(sandbox.exec("printenv", "API_KEY").stdoutText()).isEqualTo(MANAGED + "\n");
            assertThat(sandbox.exec("printenv", "PLAIN").stdoutText()).isEqualTo("literal\n");
            var v2 = ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.newBlockingStub(client.channel());
            String got = v2.getSandbox(
                            GetSandboxRequest.newBuilder().setId(sandbox.id()).build())
                    .toString();
            String listed =
                    v2.listSandboxes(ListSandboxesRequest.getDefaultInstance()).toString();
            assertThat(got).contains("MY_SECRET").doesNotContain(MANAGED);
            seen.add(got);
            seen.add(listed);
        } finally {
            sandbox.terminate();
        }
    }

    @Test
    void localSecretsAreReadFromTheGivenEnvironmentSavedAsManagedSecretsAndForgottenOnTerminate(@TempDir Path dir)
            throws Exception {
        Path dotenv = dir.resolve(".env");
        Files.writeString(dotenv, "# comment\nexport FROM_FILE=\"" + FILE_VALUE + "\"\n\nOTHER='x y'\n");
        SandboxClient local = client.withLocalEnvironment(Map.of("OPENAI_KEY", LOCAL));
        Sandbox sandbox = local.create(Sandbox.builder()
                .env("API_KEY", Secret.fromLocalEnv("OPENAI_KEY"))
                .secrets(Secret.fromLocalEnvFile(dotenv), Secret.fromLocalEnv("OPENAI_KEY"))
                .build());
        List<String> uploaded;
        try {
            assertThat(sandbox.exec("printenv", "API_KEY").stdoutText()).isEqualTo(LOCAL + "\n");
            assertThat(sandbox.exec("printenv", "OPENAI_KEY").stdoutText()).isEqualTo(LOCAL + "\n");
            assertThat(sandbox.exec("printenv", "FROM_FILE").stdoutText()).isEqualTo(FILE_VALUE + "\n");
            assertThat(sandbox.exec("printenv", "OTHER").stdoutText()).isEqualTo("x y\n");
            var v2 = ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.newBlockingStub(client.channel());
            String got = v2.getSandbox(
                            GetSandboxRequest.newBuilder().setId(sandbox.id()).build())
                    .toString();
            seen.add(got);
            assertThat(got).contains(SecretsClient.LOCAL_PREFIX + "OPENAI_KEY_");
            uploaded = client.secrets().list().stream()
                    .map(SecretInfo::name)
                    .filter(n -> n.startsWith(SecretsClient.LOCAL_PREFIX))
                    .toList();
            assertThat(uploaded).hasSize(4);
        } finally {
            sandbox.terminate();
        }
        assertThat(client.secrets().list()).extracting(SecretInfo::name).doesNotContainAnyElementsOf(uploaded);
    }

    @Test
    void anUnsetLocalVariableFailsNamingItAndCreatesNothing() {
        SandboxClient local = client.withLocalEnvironment(Map.of());
        int before = client.list().size();
        assertThatThrownBy(() -> local.create(Sandbox.builder()
                        .env("API_KEY", Secret.fromLocalEnv("NOT_SET_HERE"))
                        .build()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("NOT_SET_HERE");
        assertThat(client.list()).hasSize(before);
    }

    @Test
    void anIntegrationKeyReachesTheSandboxBoundOrInBulk() {
        IntegrationAdminServiceGrpc.newBlockingStub(client.channel())
                .putIntegration(PutIntegrationRequest.newBuilder()
                        .setName("postgres")
                        .setKind(IntegrationKind.INTEGRATION_KIND_UNSPECIFIED)
                        .putValues("PASSWORD", INTEGRATION)
                        .putValues("USER", "app")
                        .build());
        Sandbox sandbox = client.create(Sandbox.builder()
                .env("PGPASSWORD", Secret.fromChalkIntegration("postgres", "PASSWORD"))
                .secrets(Secret.fromChalkIntegration("postgres", "USER"))
                .build());
        try {
            assertThat(sandbox.exec("printenv", "PGPASSWORD").stdoutText()).isEqualTo(INTEGRATION + "\n");
            assertThat(sandbox.exec("printenv", "USER").stdoutText()).isEqualTo("app\n");
        } finally {
            sandbox.terminate();
        }
    }

    @Test
    void aMissingChalkSecretIsATypedFailureNamingIt() {
        assertThatThrownBy(() -> client.create(Sandbox.builder()
                        .env("API_KEY", Secret.fromChalkEnv("NO_SUCH_SECRET"))
                        .build()))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("NO_SUCH_SECRET")
                .satisfies(e -> seen.add(e.toString()));
    }

    @Test
    void secretsThatGiveManyValuesCannotBeBoundToOneVariable() {
        assertThatThrownBy(() -> Sandbox.builder().env("X", Secret.fromChalkIntegration("postgres")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("exactly one key");
        assertThatThrownBy(() -> Sandbox.builder().env("X", Secret.fromLocalEnvFile(Path.of(".env"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("secrets(...)");
        assertThat(Secret.fromLocalEnv("OPENAI_KEY").toString()).isEqualTo("LocalEnv[variable=OPENAI_KEY]");
    }
}
