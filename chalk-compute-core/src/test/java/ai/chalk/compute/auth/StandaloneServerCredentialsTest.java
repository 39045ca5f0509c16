package ai.chalk.compute.auth;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.identity.ConnectClient;
import ai.chalk.compute.identity.WorkloadIdentityToken;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.ClientCredentials;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A newcomer's way to a standalone server with authentication on: the credential the server wrote on its first start,
 * copied to {@code ~/.chalk.yml} or exported as variables, is all the SDK needs; it exchanges it for tokens itself.
 */
class StandaloneServerCredentialsTest {

    @Test
    void theFirstCredentialCopiedToChalkYmlIsAllTheSdkNeeds(@TempDir Path dir) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(dir.resolve("data"))
                .port(0)
                .build()
                .start()) {
            Path config = Files.createDirectories(dir.resolve("config"));
            Files.copy(dir.resolve("data").resolve("credentials.yml"), config.resolve(".chalk.yml"));
            try (SandboxClient client = SandboxClient.fromEnv(Map.of("XDG_CONFIG_HOME", config.toString()))) {
                Sandbox sandbox = client.create();
                assertThat(sandbox.exec("echo", "hello").stdoutText()).isEqualTo("hello\n");
                assertThat(client.list()).isNotEmpty();
                sandbox.terminate();
            }
        }
    }

    @Test
    void aCredentialOfAnotherEnvironmentWorksFromVariablesAndSeesOnlyItsOwnSandboxes(@TempDir Path dir)
            throws Exception {
        try (ComputeServer server =
                ComputeServer.builder().dataDir(dir).port(0).build().start()) {
            ClientCredentials.Created dev =
                    server.authentication().credentials().create("ci", "dev");
            Map<String, String> env = Map.of(
                    "CHALK_CLIENT_ID",
                    dev.credential().id(),
                    "CHALK_CLIENT_SECRET",
                    dev.secret(),
                    "CHALK_API_SERVER",
                    server.grpcUrl().orElseThrow());
            try (SandboxClient client = SandboxClient.fromEnv(env)) {
                Sandbox sandbox = client.create();
                assertThat(sandbox.exec("true").success()).isTrue();
                assertThat(client.list())
                        .extracting(ai.chalk.compute.sandbox.SandboxInfo::id)
                        .contains(sandbox.id());
            }
        }
    }

    @Test
    void connectClientGetsAnIdentityTokenForAThirdParty(@TempDir Path dir) throws Exception {
        try (ComputeServer server =
                ComputeServer.builder().dataDir(dir).port(0).build().start()) {
            ClientCredentials.Created dev =
                    server.authentication().credentials().create("etl", "dev");
            Map<String, String> env = Map.of(
                    "CHALK_CLIENT_ID",
                    dev.credential().id(),
                    "CHALK_CLIENT_SECRET",
                    dev.secret(),
                    "CHALK_API_SERVER",
                    server.grpcUrl().orElseThrow());
            try (ConnectClient connect = ConnectClient.fromEnv(env)) {
                WorkloadIdentityToken token = connect.getWorkloadIdentityToken("snowflakecomputing.com");
                assertThat(token.issuer()).isEqualTo(server.httpUrl());
                assertThat(token.subject())
                        .isEqualTo("client:" + dev.credential().id());
                assertThat(token.toString()).doesNotContain(token.token());
                JWTClaimsSet claims = SignedJWT.parse(token.token()).getJWTClaimsSet();
                assertThat(claims.getAudience()).containsExactly("snowflakecomputing.com");
                assertThat(claims.getStringClaim("environment_id")).isEqualTo("dev");
            }
        }
    }
}
