package ai.chalk.compute.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the store keeps of sandboxes, on a real database: every sandbox was kept, with its request and spec, for as long
 * as the store lived, so a tenant creating sandboxes in a loop grew the server's disk without end.
 */
class SandboxStoreTest {

    @TempDir
    Path dir;

    private static void insert(SandboxStore store, String environment, String id, SandboxState state) {
        store.insert(
                environment,
                id,
                Optional.empty(),
                state,
                "",
                "local",
                Instant.now(),
                new byte[512],
                "",
                Optional.empty());
    }

    @Test
    void anEnvironmentKeepsItsNewestFinishedSandboxesAndEveryOneStillRunning() {
        try (Database db = Database.open(dir)) {
            int kept = 300; // the server keeps 10,000 (KEPT_FINISHED); the same trims, fewer rows
            SandboxStore store = new SandboxStore(db, kept);
            insert(store, "other", "other-0", SandboxState.TERMINATED);
            insert(store, "loud", "running", SandboxState.RUNNING);
            int made = kept + 250;
            for (int i = 0; i < made; i++) {
                insert(store, "loud", "sb-" + i, i % 2 == 0 ? SandboxState.TERMINATED : SandboxState.FAILED);
            }

            assertThat(store.find("sb-0"))
                    .as("the oldest of the loud environment's")
                    .isEmpty();
            assertThat(store.find("sb-" + (made - kept))).isPresent();
            assertThat(store.find("sb-" + (made - 1))).isPresent();
            long finished = store.count("loud", SandboxState.TERMINATED) + store.count("loud", SandboxState.FAILED);
            assertThat(finished).isBetween((long) kept, kept + 100L);
            assertThat(store.find("running"))
                    .as("a sandbox not finished is never forgotten")
                    .isPresent();
            assertThat(store.find("other-0")).as("another environment's").isPresent();

            store.updateState("running", SandboxState.TERMINATED, "done");
            assertThat(store.forgetAllButNewestFinished("loud", 1)).isGreaterThan(0);
            assertThat(store.count("loud", SandboxState.FAILED) + store.count("loud", SandboxState.TERMINATED))
                    .isOne();
            assertThat(store.find("running"))
                    .as("created first, finished last: the newest kept are those that finished last")
                    .isPresent();
        }
    }
}
