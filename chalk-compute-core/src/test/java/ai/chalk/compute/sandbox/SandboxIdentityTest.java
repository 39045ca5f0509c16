package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.ClientCredentials;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.JWTParser;
import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link SandboxDefinition.Builder#chalkIdentity(boolean)} against a real in-process server: the sandbox's processes find a
 * token of their environment in the file {@code CHALK_WEB_IDENTITY_TOKEN_FILE} names and the server's address in
 * {@code CHALK_COMPUTE_TARGET}; a sandbox created without it has neither.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SandboxIdentityTest {

    private ComputeServer server;
    private SandboxClient inProcess;
    private SandboxClient overTcp;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).port(0).build().start();
        inProcess = SandboxClient.inProcess(server.inProcessName());
        // a standalone server's client: a client credential of the server, exchanged for tokens
        ClientCredentials.Created credential =
                server.authentication().credentials().create("sdk", "default");
        String target = "localhost:" + server.port().orElseThrow();
        overTcp = SandboxClient.builder()
                .target(target)
                .credentials(ChalkCredentials.ofClientCredentials(
                                credential.credential().id(), credential.secret())
                        .withApiServer("http://" + target))
                .build();
    }

    private SandboxClient client(String transport) {
        return transport.equals("tcp") ? overTcp : inProcess;
    }

    @AfterAll
    void stop() {
        for (SandboxClient client : new SandboxClient[] {inProcess, overTcp}) {
            if (client != null) {
                client.close();
            }
        }
        if (server != null) {
            server.close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"in-process", "tcp"})
    void aSandboxWithAnIdentityFindsItsTokenAndTheServer(String transport) throws Exception {
        Sandbox sandbox = client(transport).create(Sandbox.builder().chalkIdentity(true));
        try {
            String file = sandbox.exec("printenv", "CHALK_WEB_IDENTITY_TOKEN_FILE")
                    .stdoutText()
                    .strip();
            assertThat(file).isNotEmpty();
            String target = sandbox.exec("printenv", "CHALK_COMPUTE_TARGET")
                    .stdoutText()
                    .strip();
            assertThat(target).startsWith("unix:");

            ExecResult read = sandbox.exec("cat", file);
            assertThat(read.exitCode()).isZero();
            JWTClaimsSet claims = JWTParser.parse(read.stdoutText().strip()).getJWTClaimsSet();
            assertThat(claims.getStringClaim("environment_id")).isEqualTo("default");
            assertThat(claims.getSubject()).contains(sandbox.id());
            assertThat(claims.getExpirationTime().toInstant()).isAfter(Instant.now());
        } finally {
            sandbox.terminate();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"in-process", "tcp"})
    void aSandboxWithoutOneHasNoTokenNorServer(String transport) {
        Sandbox sandbox = client(transport).create(Sandbox.builder());
        try {
            ExecResult env = sandbox.exec("sh", "-c", "env | grep ^CHALK_ || true");
            assertThat(env.stdoutText()).doesNotContain("CHALK_WEB_IDENTITY_TOKEN_FILE", "CHALK_COMPUTE_TARGET");
        } finally {
            sandbox.terminate();
        }
    }
}
