package ai.chalk.compute.secret;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.scaling.ScalingGroup;
import ai.chalk.compute.server.ComputeServer;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A scaling group's secrets become references in its spec; the server keeps names, never values. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SecretScalingGroupTest {

    @TempDir
    Path dataDir;

    @Test
    void aGroupDeploysWithSecretReferencesAndTheServerEchoesNoValue() throws Exception {
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).port(0).build().start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            client.secrets().upsert("GROUP_SECRET", "group-value-31c");
            SandboxClient local = client.withLocalEnvironment(java.util.Map.of("TOKEN", "local-value-88d"));
            ScalingGroup group = ScalingGroup.create(local, "api", "")
                    .replicas(0, 1)
                    .env("API_KEY", Secret.fromChalkEnv("GROUP_SECRET"))
                    .secrets(Secret.fromLocalEnv("TOKEN"))
                    .deploy();
            String spec = group.spec().toString();
            assertThat(group.spec().getContainerSpec().getSecretRefsList()).hasSize(2);
            assertThat(spec)
                    .contains("GROUP_SECRET")
                    .contains(SecretsClient.LOCAL_PREFIX + "TOKEN_")
                    .doesNotContain("group-value-31c")
                    .doesNotContain("local-value-88d");
            group.deploy(); // a second revision keeps the references
            assertThat(group.spec().getContainerSpec().getSecretRefsList()).hasSize(2);
            group.delete();
        }
    }
}
