package ai.chalk.compute.server.sql;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.store.DatasetStore;
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
            for (String revisionId : store.completedRevisionIds(dataset.id(), LIMIT)) {
                // the schema is read when GetTables asks for it: each query reads every revision's files, and a
                // tenant's thousand revisions with a MiB schema each would otherwise be a GiB of heap per query
                tables.add(new DatasetTable(
                        dataset.name(),
                        revisionId,
                        store.files(revisionId).stream()
                                .map(f -> blobs.path(new BlobDigest(f.digestHex())))
                                .toList(),
                        latest,
                        () -> store.arrowSchema(revisionId)));
                latest = false;
            }
        }
        return tables;
    }
}
