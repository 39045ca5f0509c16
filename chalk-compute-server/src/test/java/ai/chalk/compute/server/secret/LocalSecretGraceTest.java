package ai.chalk.compute.server.secret;

import static ai.chalk.compute.server.secret.LocalSecretSweepTest.createSandbox;
import static ai.chalk.compute.server.secret.LocalSecretSweepTest.localName;
import static ai.chalk.compute.server.secret.LocalSecretSweepTest.ref;
import static ai.chalk.compute.server.secret.LocalSecretSweepTest.secretNames;
import static ai.chalk.compute.server.secret.LocalSecretSweepTest.terminate;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.server.v1.EnvironmentSecretsServiceGrpc;
import ai.chalk.compute.proto.server.v1.UpsertSecretRequest;
import ai.chalk.compute.server.RunningServer;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The grace of a secret the SDK saved for a local value whose workload never came (the client died between saving and
 * creating): it stays for the grace, then goes at the next periodic sweep; the user's own secrets and a secret of the
 * same name in another environment, used there, stay.
 */
class LocalSecretGraceTest {

    private static final Duration GRACE = Duration.ofSeconds(5);

    private static void save(Channel c, String name) {
        EnvironmentSecretsServiceGrpc.newBlockingStub(c)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .upsertSecret(UpsertSecretRequest.newBuilder()
                        .setName(name)
                        .setValue("value of " + name)
                        .build());
    }

    @Test
    void aSecretNothingReferencesStaysForItsGraceThenGoesAndNothingElseDoes(@TempDir Path dir) throws Exception {
        try (RunningServer server = RunningServer.start(
                dir, b -> b.localSecretGrace(GRACE).localSecretSweepInterval(Duration.ofMillis(200)))) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                String name = localName("ABANDONED");
                save(prod, name);
                String prodSandbox = createSandbox(
                        prod,
                        ChalkContainerSpec.newBuilder()
                                .addSecretRefs(ref(name, "X"))
                                .build());
                save(dev, "OWN_SECRET");
                long saved = System.nanoTime();
                save(dev, name);

                Thread.sleep(1000); // several sweeps, all within the grace
                assertThat(secretNames(dev)).contains(name, "OWN_SECRET");

                await().atMost(Duration.ofSeconds(30))
                        .until(() -> !secretNames(dev).contains(name));
                assertThat(Duration.ofNanos(System.nanoTime() - saved)).isGreaterThanOrEqualTo(GRACE);
                Thread.sleep(1000); // and several sweeps after it
                assertThat(secretNames(dev)).contains("OWN_SECRET");
                assertThat(secretNames(prod))
                        .as("prod's secret of that name is used by prod's sandbox")
                        .contains(name);

                terminate(prod, prodSandbox);
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> !secretNames(prod).contains(name));
            } finally {
                dev.shutdownNow();
                prod.shutdownNow();
            }
        }
    }
}
