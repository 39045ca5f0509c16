package ai.chalk.compute.server.sql;

import java.util.List;

/** Which Parquet files make which table: the dataset store, seen from SQL. */
public interface DatasetTables {

    /**
     * The completed revisions of {@code environment}'s datasets that are not archived or deleted, the latest of each
     * dataset marked. Another environment's datasets are never among them.
     */
    List<DatasetTable> completedRevisions(String environment);
}
