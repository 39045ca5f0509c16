package ai.chalk.compute.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the store keeps of SQL queries, on a real database: every query was kept with its whole text for as long as
 * the store lived, so a tenant sending megabytes of SQL in a loop filled the server's disk.
 */
class SqlJobStoreTest {

    @TempDir
    Path dir;

    private static SqlJobStore.SqlJob finished(String id, String environment, String query, Instant at) {
        return new SqlJobStore.SqlJob(
                id,
                environment,
                query,
                Optional.empty(),
                false,
                SqlJobStore.State.FAILED,
                List.of(),
                Optional.of("syntax error"),
                "",
                at,
                Optional.of(at));
    }

    @Test
    void anEnvironmentKeepsItsNewestFinishedQueriesEachWithTheStartOfItsSql() {
        try (Database db = Database.open(dir)) {
            SqlJobStore store = new SqlJobStore(db);
            Instant start = Instant.parse("2026-12-07T12:00:00Z");
            store.insertFinished(finished("other-0", "other", "SELECT 1", start));
            int made = SqlJobStore.KEPT_FINISHED + 150;
            for (int i = 0; i < made; i++) {
                store.insertFinished(finished("q-" + i, "loud", "SELECT " + i, start.plusSeconds(i)));
            }
            assertThat(store.find("q-0"))
                    .as("the oldest of the loud environment's")
                    .isEmpty();
            assertThat(store.find("q-" + (made - SqlJobStore.KEPT_FINISHED))).isPresent();
            assertThat(store.find("q-" + (made - 1))).isPresent();
            assertThat(store.find("other-0")).as("another environment's").isPresent();
            store.insert("running", "loud", "SELECT 2", Optional.empty(), true, "");
            assertThat(store.forgetAllButNewest("loud", 1)).isGreaterThan(0);
            assertThat(store.find("running"))
                    .as("a query not finished is never forgotten")
                    .isPresent();

            store.insertFinished(finished("huge", "loud", "SELECT '" + "x".repeat(1 << 20) + "'", start));
            assertThat(store.find("huge").orElseThrow().query()).hasSizeLessThanOrEqualTo(4096);
        }
    }

    @Test
    void theResultFilesOfTheQueriesKeptAreWhatTheBlobCollectionKeeps() throws InterruptedException {
        try (Database db = Database.open(dir)) {
            SqlJobStore store = new SqlJobStore(db);
            String a = "a".repeat(64);
            String b = "b".repeat(64);
            store.insert("two-files", "dev", "SELECT 1", Optional.empty(), true, "");
            store.succeeded("two-files", List.of(a, b), "2 rows");
            store.insert("one-file", "prod", "SELECT 2", Optional.empty(), true, "");
            store.succeeded("one-file", List.of(b), "1 row");
            store.insert("running", "dev", "SELECT 3", Optional.empty(), true, "");

            List<String> kept = new java.util.ArrayList<>();
            store.eachBlob((environment, digest) -> kept.add(environment + "/" + digest));

            assertThat(kept).containsExactlyInAnyOrder("dev/" + a, "dev/" + b, "prod/" + b);
            Thread.sleep(5);
            store.insertFinished(finished("newest", "dev", "SELEC", Instant.now()));
            store.forgetAllButNewest("dev", 1);
            kept.clear();
            store.eachBlob((environment, digest) -> kept.add(environment + "/" + digest));
            assertThat(kept).as("a forgotten query's files are no longer kept").containsExactly("prod/" + b);
        }
    }
}
