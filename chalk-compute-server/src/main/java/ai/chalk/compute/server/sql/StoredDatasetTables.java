package ai.chalk.compute.server.sql;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.store.DatasetStore;
import ai.chalk.compute.server.store.DatasetStore.RevisionStatus;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The dataset store seen from SQL: each dataset of the environment, its completed revisions that are not archived
 * (the newest of them is the dataset's table), their files as the blob store's paths.
 */
public final class StoredDatasetTables implements DatasetTables {

    /** The most datasets and revisions per dataset a query sees; past it the oldest are left out. */
    private static final int LIMIT = 10_000;

    private final DatasetStore store;
    private final BlobStore blobs;

    public StoredDatasetTables(DatasetStore store, BlobStore blobs) {
        this.store = store;
        this.blobs = blobs;
    }

    @Override
    public List<DatasetTable> completedRevisions(String environment) {
        List<DatasetTable> tables = new ArrayList<>();
        for (DatasetStore.DatasetRecord dataset : store.datasets(
                environment, new DatasetStore.DatasetQuery(null, List.of(), List.of(), true, 0, LIMIT))) {
            boolean latest = true;
            for (DatasetStore.RevisionRecord revision :
                    store.revisionsOf(dataset.id(), false, (Instant) null, (Instant) null, 0, LIMIT)) {
                if (revision.status() != RevisionStatus.COMPLETED) {
                    continue;
                }
                tables.add(new DatasetTable(
                        dataset.name(),
                        revision.id(),
                        store.files(revision.id()).stream()
                                .map(f -> blobs.path(new BlobDigest(f.digestHex())))
                                .toList(),
                        latest,
                        revision.arrowSchema() == null ? new byte[0] : revision.arrowSchema()));
                latest = false;
            }
        }
        return tables;
    }
}
