package ai.chalk.compute.server.sql;

import java.nio.file.Path;
import java.util.List;

/**
 * One completed dataset revision as SQL sees it: the Parquet files that make it.
 *
 * @param dataset    the dataset's name, the table {@code chalk.datasets.<name>} when {@code latest}
 * @param revisionId the revision's id, the table {@code chalk.dataset_revisions."<id>"}
 * @param files      its Parquet files, all of one schema
 * @param latest     whether it is the dataset's latest completed revision
 */
public record DatasetTable(String dataset, String revisionId, List<Path> files, boolean latest) {

    public DatasetTable {
        files = List.copyOf(files);
    }
}
