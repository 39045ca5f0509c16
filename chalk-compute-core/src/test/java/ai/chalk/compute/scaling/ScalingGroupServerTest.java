package ai.chalk.compute.scaling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.error.ScalingGroupNotFoundException;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.SandboxInfo;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.ClientCredentials;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The ScalingGroup client against the real server (local runtime: replicas are sandboxes), in process and over TCP as
 * a standalone server's client connects (a client credential exchanged for tokens).
 */
class ScalingGroupServerTest {

    @TempDir
    Path dataDir;

    private ComputeServer start() throws java.io.IOException {
        return ComputeServer.builder().dataDir(dataDir).port(0).build().start();
    }

    private static SandboxClient connect(ComputeServer server, String transport, ProgressDisplay display) {
        if (transport.equals("in-process")) {
            return display == null
                    ? SandboxClient.inProcess(server.inProcessName())
                    : SandboxClient.inProcess(server.inProcessName(), display);
        }
        ClientCredentials.Created credential =
                server.authentication().credentials().create("sdk", "default");
        String target = "localhost:" + server.port().orElseThrow();
        SandboxClient.Builder builder = SandboxClient.builder()
                .target(target)
                .credentials(ChalkCredentials.ofClientCredentials(
                                credential.credential().id(), credential.secret())
                        .withApiServer("http://" + target));
        return (display == null ? builder : builder.progress(display)).build();
    }

    /** Waits on the server's own criterion (status ready: as many ready replicas as the minimum) and checks the count. */
    private static Readiness awaitReady(ScalingGroup group, int replicas) {
        Readiness r = group.awaitReady(java.time.Duration.ofSeconds(30));
        assertThat(r.readyReplicas()).isGreaterThanOrEqualTo(replicas);
        return r;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"in-process", "tcp"})
    void awaitReadyShowsTheReplicaCountInTheClientsProgressDisplay(String transport) throws Exception {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        ai.chalk.compute.progress.ProgressDisplay display = ai.chalk.compute.progress.ProgressDisplay.of(
                ai.chalk.compute.progress.ProgressSettings.fromEnv(Map.of("TERM", "dumb"))
                        .withTerminal(false),
                new java.io.PrintStream(bytes, true, java.nio.charset.StandardCharsets.UTF_8));
        try (ComputeServer server = start();
                SandboxClient client = connect(server, transport, display)) {
            ScalingGroup web =
                    ScalingGroup.create(client, "shown", "").replicas(2, 2).deploy();
            Readiness ready = web.awaitReady(java.time.Duration.ofSeconds(60));
            assertThat(ready.readyReplicas()).isEqualTo(2);
            String shown = bytes.toString(java.nio.charset.StandardCharsets.UTF_8);
            assertThat(shown)
                    .startsWith("Scaling group \"shown\"\n  │ › Waiting for readiness\n")
                    .endsWith("  └ ✓ Ready (2/2 replicas)\n");
            List<String> lines = shown.lines().toList();
            for (int i = 1; i < lines.size(); i++) {
                assertThat(lines.get(i))
                        .as("a poll with no change prints nothing")
                        .isNotEqualTo(lines.get(i - 1));
            }
            web.delete();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"in-process", "tcp"})
    void deployRevisionsRollbackAndDelete(String transport) throws Exception {
        try (ComputeServer server = start();
                SandboxClient client = connect(server, transport, null)) {
            ScalingGroup web = ScalingGroup.create(client, "web", "")
                    .replicas(2, 2)
                    .env(Map.of("MODE", "blue"))
                    .deploy();
            Readiness first = awaitReady(web, 2);
            assertThat(first.readyReplicas()).isEqualTo(2);
            assertThat(first.status()).isEqualTo("ready");

            web.env(Map.of("MODE", "green")).deploy();
            List<ScalingGroupRevision> revisions = web.revisions();
            assertThat(revisions).hasSize(2);
            assertThat(revisions.get(1).current()).isTrue();
            assertThat(web.spec().getContainerSpec().getEnvVarsMap()).containsEntry("MODE", "green");

            web.rollback(revisions.get(0).id());
            assertThat(web.revisions())
                    .filteredOn(ScalingGroupRevision::current)
                    .extracting(ScalingGroupRevision::id)
                    .containsExactly(revisions.get(0).id());
            assertThat(awaitReady(web, 2).revisionId())
                    .isEqualTo(revisions.get(0).id());

            ScalingGroup same = ScalingGroup.fromId(client, web.id().orElseThrow());
            assertThat(same.name()).isEqualTo("web");
            assertThat(same.spec().getContainerSpec().getEnvVarsMap()).containsEntry("MODE", "blue");

            web.delete();
            assertThatThrownBy(() -> ScalingGroup.fromId(client, web.id().orElseThrow()))
                    .isInstanceOf(ScalingGroupNotFoundException.class)
                    .hasMessageContaining("NOT_FOUND");
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"in-process", "tcp"})
    void replicasWithAnIdentityFindTheirToken(String transport) throws Exception {
        try (ComputeServer server = start();
                SandboxClient client = connect(server, transport, null)) {
            ScalingGroup agents = ScalingGroup.create(client, "agents", "")
                    .replicas(1, 1)
                    .chalkIdentity(true)
                    .deploy();
            assertThat(awaitReady(agents, 1).readyReplicas()).isEqualTo(1);
            assertThat(agents.spec().getContainerSpec().hasChalkWorkloadIdentity())
                    .isTrue();

            List<SandboxInfo> replicas = client.list();
            assertThat(replicas).hasSize(1);
            Sandbox replica = client.attach(replicas.get(0).id());
            assertThat(replica.exec("sh", "-c", "test -s \"$CHALK_WEB_IDENTITY_TOKEN_FILE\" && echo token")
                            .stdoutText())
                    .isEqualTo("token\n");
            agents.delete();
        }
    }
}
