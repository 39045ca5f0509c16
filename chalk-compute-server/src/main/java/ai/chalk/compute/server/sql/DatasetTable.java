package ai.chalk.compute.server.sql;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * One completed dataset revision as SQL sees it: the Parquet files that make it.
 *
 * @param dataset     the dataset's name, the table {@code chalk.datasets.<name>} when {@code latest}
 * @param revisionId  the revision's id, the table {@code chalk.dataset_revisions."<id>"}
 * @param files       its Parquet files, all of one schema
 * @param latest      whether it is the dataset's latest completed revision
 * @param schema      reads its schema as a serialized Arrow schema (what GetTables returns), empty when unknown: read
 *                    only when asked for, since a query needs the files alone
 */
public record DatasetTable(
        String dataset, String revisionId, List<Path> files, boolean latest, Supplier<byte[]> schema) {

    public DatasetTable {
        files = List.copyOf(files);
        Objects.requireNonNull(schema, "schema");
    }

    /** A table whose Arrow schema is known already. */
    public DatasetTable(String dataset, String revisionId, List<Path> files, boolean latest, byte[] arrowSchema) {
        this(dataset, revisionId, files, latest, held(arrowSchema));
    }

    /** A table whose Arrow schema is not known. */
    public DatasetTable(String dataset, String revisionId, List<Path> files, boolean latest) {
        this(dataset, revisionId, files, latest, new byte[0]);
    }

    private static Supplier<byte[]> held(byte[] arrowSchema) {
        byte[] copy = arrowSchema.clone();
        return () -> copy;
    }

    /** Its schema as a serialized Arrow schema, read now; empty when unknown. */
    public byte[] arrowSchema() {
        return schema.get().clone();
    }

    // the schema is derived from the files: two tables of the same revision and files are the same table
    @Override
    public boolean equals(Object o) {
        return o instanceof DatasetTable t
                && t.dataset.equals(dataset)
                && t.revisionId.equals(revisionId)
                && t.files.equals(files)
                && t.latest == latest;
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(dataset, revisionId, files, latest);
    }
}
