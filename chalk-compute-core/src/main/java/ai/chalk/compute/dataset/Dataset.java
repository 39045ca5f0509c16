package ai.chalk.compute.dataset;

import ai.chalk.compute.proto.server.v1.DatasetMeta;
import java.time.Instant;
import java.util.Optional;

/**
 * A dataset as the server described it when asked: a stable parent whose newest revision is what readers read.
 * Uploading to its name again makes a new revision; this value does not change, ask again for the news.
 *
 * @param id        the dataset's id (stable across renames)
 * @param name      its name, unique in the environment
 * @param createdAt when its first revision was uploaded
 * @param revisions how many revisions it has that are not archived
 * @param latest    its newest revision that is not archived, if any
 */
public record Dataset(String id, String name, Instant createdAt, long revisions, Optional<DatasetRevision> latest) {

    /**
     * The id of the newest revision: what {@link DatasetClient#download(String, java.nio.file.Path)} takes.
     *
     * @return the revision id
     * @throws IllegalStateException when every revision is archived
     */
    public String revisionId() {
        return latest().orElseThrow(() ->
                        new IllegalStateException("dataset " + name + " has no revision that is" + " not archived"))
                .id();
    }

    /**
     * Where the newest revision stands.
     *
     * @return its status, {@link DatasetStatus#UNKNOWN} when every revision is archived
     */
    public DatasetStatus status() {
        return latest().map(DatasetRevision::status).orElse(DatasetStatus.UNKNOWN);
    }

    /**
     * Rows of the newest revision.
     *
     * @return its row count, 0 when there is none
     */
    public long rows() {
        return latest().map(DatasetRevision::rows).orElse(0L);
    }

    static Dataset of(DatasetMeta m) {
        return new Dataset(
                m.getId(),
                m.getDatasetName(),
                DatasetRevision.instant(m.getCreatedAt()),
                m.getNumRevisions(),
                m.hasMostRecentRevision()
                        ? Optional.of(DatasetRevision.of(m.getMostRecentRevision()))
                        : Optional.empty());
    }
}
