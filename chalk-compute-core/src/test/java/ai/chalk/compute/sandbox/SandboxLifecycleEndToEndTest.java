package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.error.InvalidRequestException;
import ai.chalk.compute.error.SnapshotNotFoundException;
import ai.chalk.compute.server.ComputeServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sandbox options and lifecycle of issue 14 (lifetime, tags, workdir, gpu and compute class, snapshots,
 * suspend and resume, close) against a real {@link ComputeServer}; subclasses choose the transport.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class SandboxLifecycleEndToEndTest {

    ComputeServer server;
    SandboxClient client;
    /** Sandboxes a test created, terminated after it. */
    private final List<Sandbox> created = new ArrayList<>();

    /** Opens the client under test for the running server. */
    abstract SandboxClient connect(ComputeServer server);

    @BeforeAll
    void startServer(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).port(0).build().start();
        client = connect(server);
    }

    @AfterEach
    void terminateCreated() {
        for (Sandbox s : created) {
            if (!s.refresh().isTerminated()) {
                s.terminate();
            }
        }
        created.clear();
    }

    @AfterAll
    void stopServer() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private Sandbox create(SandboxDefinition.Builder definition) {
        Sandbox sandbox = client.create(definition);
        created.add(sandbox);
        return sandbox;
    }

    // ---- builder options ----

    @Test
    void aSandboxEndsWhenItsLifetimeRunsOut() {
        Sandbox sandbox = create(Sandbox.builder().lifetime(Duration.ofSeconds(2)));
        assertThat(sandbox.exec("echo", "alive").stdoutText()).isEqualTo("alive\n");
        await().atMost(Duration.ofSeconds(30)).until(() -> sandbox.refresh().isTerminated());
        assertThat(sandbox.info().statusMessage())
                .hasValueSatisfying(m -> assertThat(m).contains("lifetime"));
    }

    @Test
    void aLifetimeLongerThanTheServerAllowsIsRefusedNamingTheMaximum() {
        assertThatThrownBy(() -> client.create(Sandbox.builder().lifetime(Duration.ofDays(30))))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessageContaining("lifetime")
                .hasMessageContaining("--sandbox-lifetime");
    }

    @Test
    void tagsAreKeptAndSandboxesAreListedByTag() {
        String run = UUID.randomUUID().toString();
        Sandbox search = create(Sandbox.builder().tags("run", run, "team", "search"));
        Sandbox ranking = create(Sandbox.builder().tags(Map.of("run", run, "team", "ranking")));

        assertThat(search.info().tags()).containsExactlyInAnyOrderEntriesOf(Map.of("run", run, "team", "search"));
        assertThat(client.get(ranking.id()).info().tags()).containsEntry("team", "ranking");
        assertThat(client.listAll(ListOptions.defaults().tag("run", run)))
                .extracting(SandboxInfo::id)
                .containsExactlyInAnyOrder(search.id(), ranking.id());
        assertThat(client.listAll(ListOptions.defaults().tag("run", run).tag("team", "search")))
                .extracting(SandboxInfo::id)
                .containsExactly(search.id());
    }

    @Test
    void aClientsSandboxDefaultsApplyWhereTheDefinitionSetsNothingAndItsOwnTagsWin() {
        String run = UUID.randomUUID().toString();
        SandboxClient defaulted = client.withSandboxDefaults(SandboxDefaults.none()
                .lifetime(Duration.ofSeconds(2))
                .tag("run", run)
                .tag("team", "platform"));
        Sandbox plain = defaulted.create(Sandbox.builder());
        created.add(plain);
        Sandbox own = defaulted.create(Sandbox.builder().tag("team", "search").lifetime(Duration.ofMinutes(10)));
        created.add(own);

        assertThat(plain.info().tags()).containsExactlyInAnyOrderEntriesOf(Map.of("run", run, "team", "platform"));
        assertThat(own.info().tags()).containsExactlyInAnyOrderEntriesOf(Map.of("run", run, "team", "search"));
        assertThat(client.listAll(ListOptions.defaults().tag("run", run)))
                .extracting(SandboxInfo::id)
                .containsExactlyInAnyOrder(plain.id(), own.id());
        await().atMost(Duration.ofSeconds(30)).until(() -> plain.refresh().isTerminated());
        assertThat(own.refresh().isTerminated()).as("its own lifetime wins").isFalse();
        assertThat(client.sandboxDefaults()).isEqualTo(SandboxDefaults.none());
        assertThatThrownBy(() -> SandboxDefaults.none().lifetime(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("positive");
    }

    @Test
    void listingByNameAndStateFindsOnlyThoseSandboxes() {
        String name = "named-" + UUID.randomUUID();
        Sandbox named = create(Sandbox.builder().name(name));
        assertThat(client.listAll(ListOptions.defaults().names(name)))
                .extracting(SandboxInfo::id)
                .containsExactly(named.id());
        named.terminate();
        assertThat(client.listAll(ListOptions.defaults().names(name))).isEmpty();
        assertThat(client.listAll(ListOptions.defaults().names(name).states("TERMINATED")))
                .extracting(SandboxInfo::id)
                .containsExactly(named.id());
        assertThat(client.listAll(ListOptions.defaults()
                        .names(name)
                        .includeTerminated(true)
                        .notStates("TERMINATED")))
                .isEmpty();
    }

    @Test
    void commandsRunInTheDefinitionsWorkdirUnlessTheySetTheirOwn() {
        Sandbox sandbox = create(Sandbox.builder().workdir("/tmp"));
        assertThat(sandbox.exec("pwd").stdoutText()).isEqualTo("/tmp\n");
        assertThat(sandbox.exec(Command.of("pwd").workdir("/")).stdoutText()).isEqualTo("/\n");
        assertThatThrownBy(() -> Sandbox.builder().workdir("relative"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("absolute");
    }

    @Test
    void anEntrypointIsTheSandboxsMainProcessStartedWithIt() {
        Sandbox sandbox = create(Sandbox.builder()
                .entrypoint(List.of("sh", "-c", "echo \"started in $PWD\" > /tmp/entrypoint.out; exec sleep 600")));
        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(
                                sandbox.exec("cat", "/tmp/entrypoint.out").stdoutText())
                        .startsWith("started in /"));
        assertThat(sandbox.exec("sh", "-c", "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\"; echo; done")
                        .stdoutText())
                .as("it keeps running beside the commands")
                .contains("sleep 600");
    }

    @Test
    void aSandboxHasNoNetworkUnlessItsDefinitionAllowsIt() {
        Sandbox none = create(Sandbox.builder());
        Sandbox all = create(Sandbox.builder().network(ai.chalk.compute.network.NetworkPolicy.all()));
        assertThat(none.exec("cat", "/proc/net/dev").stdoutText())
                .as("only loopback")
                .doesNotContain("tap0");
        assertThat(all.exec("cat", "/proc/net/dev").stdoutText())
                .as("the interface of the way out")
                .contains("tap0");
    }

    @Test
    void aGpuIsRefusedByAServerWithoutGpus() {
        assertThatThrownBy(() -> client.create(Sandbox.builder().gpu("1")))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("resources.gpu")
                .hasMessageContaining("no GPUs");
    }

    @Test
    void aComputeClassIsRefusedByAServerThatRunsSandboxesOnItsOwnHost() {
        assertThatThrownBy(() -> client.create(Sandbox.builder().computeClass(ComputeClass.HOST)))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("compute_class")
                .hasMessageContaining("COMPUTE_CLASS_HOST");
    }

    @Test
    void aSnapshotDefinitionTakesNoOtherSettings() {
        assertThatThrownBy(() -> Sandbox.builder()
                        .snapshot("snap-1")
                        .image("ubuntu:latest")
                        .tag("a", "b")
                        .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("image, tags");
        assertThatThrownBy(() -> Sandbox.builder().tags("lonely"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\"lonely\" has no value");
    }

    // ---- close ----

    @Test
    void closingASandboxThisHandleCreatedTerminatesIt() {
        Sandbox kept;
        try (Sandbox sandbox = client.create(Sandbox.builder())) {
            kept = sandbox;
            assertThat(sandbox.exec("true").success()).isTrue();
        }
        assertThat(kept.refresh().isTerminated()).isTrue();
        kept.close(); // a second close does nothing
    }

    @Test
    void closingAnAttachedHandleLeavesTheSandboxRunningUnlessAsked() {
        Sandbox sandbox = create(Sandbox.builder());
        try (Sandbox attached = client.attach(sandbox.id())) {
            assertThat(attached.exec("echo", "hi").stdoutText()).isEqualTo("hi\n");
        }
        try (Sandbox looked = client.get(sandbox.id())) {
            assertThat(looked.info().isRunning()).isTrue();
        }
        assertThat(sandbox.refresh().isRunning()).isTrue();
        try (Sandbox owner = client.attach(sandbox.id()).terminateOnClose()) {
            assertThat(owner.id()).isEqualTo(sandbox.id());
        }
        assertThat(sandbox.refresh().isTerminated()).isTrue();
    }

    // ---- suspend and resume ----

    @Test
    void aSuspendedSandboxRunsNoCommandsUntilResumedAndKeepsItsProcesses() {
        Sandbox sandbox = create(Sandbox.builder());
        sandbox.exec(Command.shell("sleep 300 >/dev/null 2>&1 & echo $! > /tmp/sleeper"));
        sandbox.suspend();
        sandbox.suspend(); // suspending a suspended sandbox does nothing
        assertThat(sandbox.refresh().state()).isEqualTo("SUSPENDED");
        assertThat(sandbox.info().statusMessage())
                .hasValueSatisfying(m -> assertThat(m).contains("suspended"));
        assertThatThrownBy(() -> sandbox.exec("true"))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("suspended");
        sandbox.resume();
        assertThat(sandbox.refresh().state()).isEqualTo("RUNNING");
        assertThat(sandbox.exec(Command.shell("kill -0 $(cat /tmp/sleeper) && echo alive"))
                        .stdoutText())
                .isEqualTo("alive\n");
    }

    // ---- snapshots ----

    @Test
    void aSnapshotRestoresTheFilesIntoNewSandboxesUntilDeleted() {
        Sandbox original = create(Sandbox.builder().tag("role", "original"));
        original.files().writeText("/tmp/state.txt", "prepared");
        Snapshot snapshot = original.snapshot();
        assertThat(snapshot.status()).isEqualTo(Snapshot.Status.COMPLETED);
        assertThat(snapshot.sandboxId()).isEqualTo(original.id());
        assertThat(snapshot.completedAt()).isPresent();
        original.files().writeText("/tmp/state.txt", "changed later");

        try (Sandbox copy = snapshot.restore()) {
            assertThat(copy.id()).isNotEqualTo(original.id());
            assertThat(copy.files().readText("/tmp/state.txt")).isEqualTo("prepared");
            assertThat(copy.info().tags()).containsEntry("role", "original");
        }
        try (Sandbox again =
                client.create(Sandbox.builder().snapshot(snapshot.id()).workdir("/tmp"))) {
            assertThat(again.exec("cat", "state.txt").stdoutText()).isEqualTo("prepared");
        }

        assertThat(client.snapshots().list()).extracting(Snapshot::id).contains(snapshot.id());
        assertThat(client.snapshots().listOf(original.id()))
                .extracting(Snapshot::id)
                .containsExactly(snapshot.id());
        assertThat(snapshot.refresh().status()).isEqualTo(Snapshot.Status.COMPLETED);
        Snapshot found = client.snapshots().get(snapshot.id());
        assertThat(found.sandboxId()).as("found by id").isEqualTo(original.id());
        assertThat(found.status()).isEqualTo(Snapshot.Status.COMPLETED);

        snapshot.delete();
        assertThatThrownBy(() -> client.snapshots().get(snapshot.id())).isInstanceOf(SnapshotNotFoundException.class);
        assertThatThrownBy(snapshot::refresh).isInstanceOf(SnapshotNotFoundException.class);
        assertThatThrownBy(snapshot::restore).isInstanceOf(SnapshotNotFoundException.class);
        assertThat(client.snapshots().listOf(original.id())).isEmpty();
    }

    // ---- sessions ----

    @Test
    void aDetachedSessionKeepsRunningAndAnotherClientReadsOnFromWhereItStopped() {
        Sandbox sandbox = create(Sandbox.builder().workdir("/tmp"));
        Session first = sandbox.session(Command.shell("pwd; sleep 1; echo two; exit 3"));
        assertThat(first.sandboxId()).isEqualTo(sandbox.id());
        Session.Event pwd = first.next().orElseThrow();
        assertThat(pwd.event().stdoutText()).isEqualTo("/tmp\n");
        long seen = first.lastSeq();
        assertThat(seen).isEqualTo(pwd.seq());
        first.detach();
        assertThat(first.next()).isEmpty();

        try (SandboxClient elsewhere = connect(server);
                Session again = Session.attach(elsewhere, sandbox.id(), first.id(), seen)) {
            StringBuilder out = new StringBuilder();
            ExecEvent last = null;
            for (var e = again.next(); e.isPresent(); e = again.next()) {
                assertThat(e.get().seq()).isGreaterThan(seen);
                if (e.get().event().stdoutText() != null) {
                    out.append(e.get().event().stdoutText());
                }
                last = e.get().event();
            }
            assertThat(out.toString()).isEqualTo("two\n");
            assertThat(last).isInstanceOf(ExecEvent.Exited.class);
            assertThat(last.exitCode()).hasValue(3);
        }
        assertThat(sandbox.sessions()).singleElement().satisfies(info -> {
            assertThat(info.id()).isEqualTo(first.id());
            assertThat(info.command()).isEqualTo("sh");
            assertThat(info.running()).isFalse();
            assertThat(info.exitCode()).hasValue(3);
        });
        try (Session replay = Session.attach(client, sandbox.id(), first.id(), 0)) {
            assertThat(replay.next().orElseThrow().event().stdoutText()).isEqualTo("/tmp\n");
            assertThat(replay.awaitExit().exitCode()).hasValue(3);
        }
    }

    @Test
    void aSessionTakesStdin() {
        Sandbox sandbox = create(Sandbox.builder());
        try (Session cat = sandbox.session(Command.of("cat"))) {
            cat.writeStdin("through the session\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            cat.closeStdin();
            assertThat(cat.next().orElseThrow().event().stdoutText()).isEqualTo("through the session\n");
            assertThat(cat.awaitExit().exitCode()).hasValue(0);
        }
    }

    @Test
    void aSignalSentThroughAReattachedSessionEndsItsProcess() {
        Sandbox sandbox = create(Sandbox.builder());
        Session sleeper = sandbox.session(Command.of("sleep", "300"));
        sleeper.detach();
        assertThat(sandbox.sessions())
                .singleElement()
                .satisfies(info -> assertThat(info.running()).isTrue());
        try (Session again = Session.attach(client, sandbox.id(), sleeper.id(), sleeper.lastSeq())) {
            again.signal(Signal.TERM);
            ExecEvent.Exited end = again.awaitExit();
            assertThat(end.signal()).hasValue(15);
        }
    }

    @Test
    void attachingToAnUnknownSessionIsNotFound() {
        Sandbox sandbox = create(Sandbox.builder());
        assertThatThrownBy(() -> Session.attach(client, sandbox.id(), "no-such-session", 0))
                .isInstanceOf(ai.chalk.compute.error.NotFoundException.class)
                .hasMessageContaining("no-such-session");
    }

    // ---- the README's example ----

    @Test
    void theReadmesLifecycleExampleRuns() {
        Sandbox kept;
        try (Sandbox sandbox = client.create(Sandbox.builder()
                .lifetime(Duration.ofMinutes(30))
                .tags("team", "search", "stage", "dev")
                .workdir("/tmp"))) {
            kept = sandbox;
            sandbox.suspend();
            sandbox.resume();

            Snapshot snapshot = sandbox.snapshot();
            try (Sandbox copy = snapshot.restore()) {
                assertThat(copy.exec("ls").success()).isTrue();
            }

            Session build = sandbox.session(Command.shell("echo built"));
            String sessionId = build.id();
            long seen = build.lastSeq();
            build.detach();
            try (Session again = Session.attach(client, sandbox.id(), sessionId, seen)) {
                ExecEvent.Exited end = again.awaitExit();
                assertThat(end.status()).isZero();
            }
            snapshot.delete();
            assertThat(client.listAll(
                            ListOptions.defaults().tag("team", "search").states("RUNNING")))
                    .extracting(SandboxInfo::id)
                    .contains(sandbox.id());
        }
        assertThat(kept.refresh().isTerminated()).isTrue();
    }
}
