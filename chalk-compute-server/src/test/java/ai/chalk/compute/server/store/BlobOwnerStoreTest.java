package ai.chalk.compute.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which environment stored which blob, and when it last used it, on a real database: a blob its environment asks about
 * is kept from collection as if stored then, so a client that found its code present and skipped the upload does not
 * deploy a digest collected meanwhile; the use is written at most once a minute, since a write per digest made large
 * presence checks hold the store's writes.
 */
class BlobOwnerStoreTest {

    @TempDir
    Path dir;

    private static final String A = "a".repeat(64);
    private static final String B = "b".repeat(64);

    @Test
    void askingAboutABlobKeepsItFromCollectionAndIsWrittenAtMostOnceAMinute() {
        try (Database db = Database.open(dir)) {
            BlobOwnerStore owners = new BlobOwnerStore(db, List::of, hex -> 0);
            owners.own("dev", A, 10);
            owners.own("dev", B, 20);
            Instant hourAgo = Instant.now().minusSeconds(3600);
            SqlQuery.update(
                    db,
                    "UPDATE blob_owner SET used_at = ?",
                    ps -> ps.setTimestamp(1, Timestamp.from(hourAgo)),
                    "backdating");
            Instant cutoff = Instant.now().minusSeconds(60);

            assertThat(owners.owns("dev", A)).isTrue();
            assertThat(owners.owns("prod", A)).as("another environment's").isFalse();

            assertThat(owners.unusedSince(cutoff))
                    .extracting(BlobOwnerStore.Owned::digestHex)
                    .containsExactly(B);
            assertThat(owners.release(new BlobOwnerStore.Owned("dev", A, 10), cutoff))
                    .as("used since the cutoff")
                    .isFalse();
            assertThat(owners.release(new BlobOwnerStore.Owned("dev", B, 20), cutoff))
                    .isTrue();
            assertThat(owners.stored("dev")).isEqualTo(10);
            assertThat(owners.owns("dev", B)).isFalse();
            assertThat(owners.ownedDigests()).containsExactly(A);

            // a use within the minute is not written again
            Instant firstUse = SqlQuery.select(
                            db,
                            "SELECT used_at FROM blob_owner WHERE digest = ?",
                            List.of(A),
                            rs -> rs.getTimestamp(1).toInstant(),
                            "use")
                    .get(0);
            assertThat(owners.owns("dev", A)).isTrue();
            assertThat(SqlQuery.select(
                            db,
                            "SELECT used_at FROM blob_owner WHERE digest = ?",
                            List.of(A),
                            rs -> rs.getTimestamp(1).toInstant(),
                            "use"))
                    .containsExactly(firstUse);
        }
    }
}
