package ai.chalk.compute.secret;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.deploy.WorkerMode;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.proto.integrations.v1.IntegrationAdminServiceGrpc;
import ai.chalk.compute.proto.integrations.v1.PutIntegrationRequest;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.ClientCredentials;
import com.acme.SecretReader;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A deployed function's secrets against a real server and real workers: the aliased Chalk secret reaches the replica;
 * an unchanged deploy reuses the version until the secret is set again; integration secrets make every deploy a new
 * version.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class SecretFunctionTest {

    @TempDir
    Path dataDir;

    @Test
    void aFunctionSeesItsSecretAndItsVersionFollowsTheSecretsRevision() throws Exception {
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).port(0).build().start();
                SandboxClient client = authenticated(server);
                CodeSnapshot code = CodeSnapshot.ofClassPath()) {
            FunctionRegistry registry = new FunctionRegistry();
            registry.register(SecretReader.class);
            FunctionDefinition read = registry.get("readEnv").definition();
            client.secrets().upsert("FN_SECRET", "first-value");

            FunctionVersion first = client.functions().deploy(read, code, WorkerMode.PLAIN, false);
            assertThat(RemoteFunction.fromName(client, "readEnv").call("API_KEY"))
                    .isEqualTo("first-value");
            FunctionVersion unchanged = client.functions().deploy(read, code, WorkerMode.PLAIN, false);
            assertThat(unchanged.version()).as("nothing changed: reused").isEqualTo(first.version());

            Thread.sleep(5); // a distinct update time
            client.secrets().upsert("FN_SECRET", "second-value");
            FunctionVersion changed = client.functions().deploy(read, code, WorkerMode.PLAIN, false);
            assertThat(changed.version()).as("the secret's revision changed").isEqualTo(first.version() + 1);
            assertThat(client.functions()
                            .deploy(read, code, WorkerMode.PLAIN, false)
                            .version())
                    .isEqualTo(changed.version());

            IntegrationAdminServiceGrpc.newBlockingStub(client.channel())
                    .putIntegration(PutIntegrationRequest.newBuilder()
                            .setName("postgres")
                            .putValues("PASSWORD", "pw")
                            .build());
            FunctionDefinition withIntegration = withSecrets(
                    read,
                    read.deployment()
                            .secrets()
                            .withBulk(java.util.List.of(Secret.fromChalkIntegration("postgres", "PASSWORD"))));
            FunctionVersion a = client.functions().deploy(withIntegration, code, WorkerMode.PLAIN, false);
            FunctionVersion b = client.functions().deploy(withIntegration, code, WorkerMode.PLAIN, false);
            assertThat(b.version()).as("integration secrets disable reuse").isEqualTo(a.version() + 1);

            SandboxClient local = client.withLocalEnvironment(java.util.Map.of("LOCAL_TOKEN", "local-token"));
            FunctionDefinition withLocal =
                    withSecrets(read, read.deployment().secrets().with("TOKEN", Secret.fromLocalEnv("LOCAL_TOKEN")));
            FunctionVersion c = local.functions().deploy(withLocal, code, WorkerMode.PLAIN, false);
            assertThat(c.version()).isEqualTo(b.version() + 1);
            assertThat(RemoteFunction.fromName(client, "readEnv").call("TOKEN")).isEqualTo("local-token");
            assertThat(RemoteFunction.fromName(client, "readEnv").call("API_KEY"))
                    .isEqualTo("second-value");
        }
    }

    private static FunctionDefinition withSecrets(FunctionDefinition f, SecretBindings secrets) {
        return new FunctionDefinition(
                f.name(),
                f.kind(),
                f.declaringClass(),
                f.method(),
                f.className(),
                f.description(),
                f.deployment().withSecrets(secrets),
                f.callOptions(),
                f.parameters(),
                f.returnType(),
                f.inputSchema(),
                f.outputSchema());
    }

    /** A client over TCP showing tokens of a credential of the server's default environment. */
    private static SandboxClient authenticated(ComputeServer server) {
        ClientCredentials.Created credential =
                server.authentication().credentials().create("secrets", "default");
        String target = "127.0.0.1:" + server.port().orElseThrow();
        return SandboxClient.builder()
                .target(target)
                .credentials(ChalkCredentials.ofClientCredentials(
                                credential.credential().id(), credential.secret())
                        .withApiServer("http://" + target))
                .build();
    }
}
