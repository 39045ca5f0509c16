package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.ComputeServer;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.JWTParser;
import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SandboxDefinition.Builder#chalkIdentity(boolean)} against a real in-process server: the sandbox's processes find a
 * token of their environment in the file {@code CHALK_WEB_IDENTITY_TOKEN_FILE} names and the server's address in
 * {@code CHALK_COMPUTE_TARGET}; a sandbox created without it has neither.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SandboxIdentityTest {

    private ComputeServer server;
    private SandboxClient client;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).port(0).build().start();
        client = SandboxClient.inProcess(server.inProcessName());
    }

    @AfterAll
    void stop() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void aSandboxWithAnIdentityFindsItsTokenAndTheServer() throws Exception {
        Sandbox sandbox = client.create(Sandbox.builder().chalkIdentity(true));
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

    @Test
    void aSandboxWithoutOneHasNoTokenNorServer() {
        Sandbox sandbox = client.create(Sandbox.builder());
        try {
            ExecResult env = sandbox.exec("sh", "-c", "env | grep ^CHALK_ || true");
            assertThat(env.stdoutText()).doesNotContain("CHALK_WEB_IDENTITY_TOKEN_FILE", "CHALK_COMPUTE_TARGET");
        } finally {
            sandbox.terminate();
        }
    }
}
