package ai.chalk.compute.server.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.sql.DatasetTable;
import ai.chalk.compute.server.sql.StoredDatasetTables;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The dataset revisions SQL sees, from the server's own database: completed ones, newest first, schemas read late. */
class CompletedRevisionsTest {

    @TempDir
    Path dir;

    @Test
    void completedRevisionsAreListedNewestFirstAndTheirSchemasAreReadOnlyWhenAskedFor() throws Exception {
        try (Database db = Database.open(dir)) {
            DatasetStore store = new DatasetStore(db);
            Instant at = Instant.now();
            revision(store, "s1", "rev1", at);
            store.completeRevision("rev1", List.of(), List.of(), new byte[] {1, 2, 3}, at);
            revision(store, "s2", "rev2", at);
            store.completeRevision("rev2", List.of(), List.of(), null, at);
            revision(store, "s3", "rev3", at); // still working: not a table
            revision(store, "s4", "rev4", at);
            store.failRevision("rev4", "the upload failed", at); // failed: not a table
            revision(store, "s5", "rev5", at);
            store.completeRevision("rev5", List.of(), List.of(), null, at);
            assertThat(store.archive("dev", "rev5", at)).isPresent(); // archived: not a table
            store.openSession("prod", "s6", at);
            assertThat(store.beginRevision("prod", "s6", "orders", "ds-prod", "rev6", at))
                    .isPresent();
            store.completeRevision("rev6", List.of(), List.of(), null, at);

            StoredDatasetTables tables = new StoredDatasetTables(store, new BlobStore(dir.resolve("blobs")));
            List<DatasetTable> listed = tables.completedRevisions("dev");
            assertThat(listed)
                    .extracting(DatasetTable::revisionId, DatasetTable::latest)
                    .containsExactly(tuple("rev2", true), tuple("rev1", false));
            assertThat(listed.get(0).arrowSchema()).isEmpty();
            // read when asked for, not with the listing: a schema written since is the one read
            db.execute("UPDATE dataset_revision SET arrow_schema = X'09' WHERE id = 'rev1'");
            assertThat(listed.get(1).arrowSchema()).containsExactly(9);
            assertThat(tables.completedRevisions("prod"))
                    .extracting(DatasetTable::revisionId)
                    .containsExactly("rev6");
            assertThat(tables.completedRevisions("staging")).isEmpty();
        }
    }

    private static void revision(DatasetStore store, String session, String revisionId, Instant at) {
        store.openSession("dev", session, at);
        assertThat(store.beginRevision("dev", session, "orders", "ds-" + revisionId, revisionId, at))
                .isPresent();
    }
}
