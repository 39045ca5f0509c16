package ai.chalk.compute.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.store.FunctionStore.FunctionRecord;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The lookups a call repeats (a function by id, a version by number) are served from memory between writes: every
 * write of the store shows in the next lookup, as a deleted function or version or a new current version.
 */
class FunctionStoreTest {

    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

    @TempDir
    Path dir;

    @Test
    void lookupsSeeEveryWriteMadeAfterThem() {
        try (Database db = Database.open(dir)) {
            FunctionStore store = new FunctionStore(db);
            FunctionRecord f = store.insertFunction("default", "fn-1", "score", T0);
            assertThat(store.function("fn-1").orElseThrow().currentVersionId()).isEmpty();

            VersionRecord v1 = store.insertVersion(f, "ver-1", 1, new byte[] {1}, "rev-1", T0);
            assertThat(store.function("fn-1").orElseThrow().currentVersionId()).contains("ver-1");
            assertThat(store.version("fn-1", 1).orElseThrow().id()).isEqualTo(v1.id());
            assertThat(store.version("fn-1", 2)).as("not yet").isEmpty();

            store.insertVersion(f, "ver-2", 2, new byte[] {2}, "rev-2", T0.plusSeconds(1));
            assertThat(store.version("fn-1", 2))
                    .as("a missing version is not remembered past a write")
                    .isPresent();
            assertThat(store.function("fn-1").orElseThrow().currentVersionId()).contains("ver-2");

            store.setCurrent("fn-1", "ver-1", T0.plusSeconds(2));
            assertThat(store.function("fn-1").orElseThrow().currentVersionId()).contains("ver-1");

            store.deleteVersion("ver-2", T0.plusSeconds(3));
            assertThat(store.version("fn-1", 2).orElseThrow().deletedAt()).isPresent();

            store.deleteFunction("fn-1", T0.plusSeconds(4));
            assertThat(store.function("fn-1").orElseThrow().deletedAt()).isPresent();
            assertThat(store.version("fn-1", 1).orElseThrow().deletedAt()).isPresent();
        }
    }
}
