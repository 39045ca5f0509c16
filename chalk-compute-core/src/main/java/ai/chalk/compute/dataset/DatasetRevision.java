package ai.chalk.compute.dataset;

import ai.chalk.compute.proto.server.v1.DatasetRevisionMeta;
import com.google.protobuf.Struct;
import com.google.protobuf.Timestamp;
import com.google.protobuf.Value;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One immutable revision of a dataset: what one upload made.
 *
 * @param id          the revision's id: what {@link DatasetClient#download(String, java.nio.file.Path)} takes
 * @param numericId   its number, increasing with each revision the server makes
 * @param datasetId   the dataset it belongs to
 * @param status      where it stands; only a {@link DatasetStatus#COMPLETED} revision has files
 * @param rows        how many rows its files hold (0 until completed)
 * @param sizeBytes   the size of its Parquet files together
 * @param files       how many Parquet files it has
 * @param columns     its columns, in order
 * @param createdAt   when the upload was finalized
 * @param completedAt when it completed or failed, if it has
 * @param archivedAt  when it was archived, if it was
 * @param error       why it failed, if it did
 */
public record DatasetRevision(
        String id,
        long numericId,
        String datasetId,
        DatasetStatus status,
        long rows,
        long sizeBytes,
        long files,
        List<DatasetColumn> columns,
        Instant createdAt,
        Optional<Instant> completedAt,
        Optional<Instant> archivedAt,
        Optional<String> error) {

    static DatasetRevision of(DatasetRevisionMeta m) {
        Map<String, Value> metadata = m.getMetadata().getStructValue().getFieldsMap();
        List<DatasetColumn> columns = new ArrayList<>();
        Value described = metadata.get("columns");
        if (described != null && described.hasListValue()) {
            for (Value c : described.getListValue().getValuesList()) {
                Struct s = c.getStructValue();
                columns.add(new DatasetColumn(
                        s.getFieldsOrDefault("name", Value.getDefaultInstance()).getStringValue(),
                        s.getFieldsOrDefault("type", Value.getDefaultInstance()).getStringValue()));
            }
        } else {
            m.getOutputColumnsList().forEach(name -> columns.add(new DatasetColumn(name, "")));
        }
        // Chalk's revisions are known by their numeric id; this server also sends the id its RPCs take
        Value id = metadata.get("revision_id");
        Value error = metadata.get("error");
        return new DatasetRevision(
                id != null ? id.getStringValue() : Long.toString(m.getNumericId()),
                m.getNumericId(),
                m.getDatasetId(),
                DatasetStatus.of(m.getStatus()),
                m.getNumRows(),
                m.getPhysicalSizeBytes(),
                m.getNumShards(),
                List.copyOf(columns),
                instant(m.getCreatedAt()),
                m.hasCompletedAt() ? Optional.of(instant(m.getCompletedAt())) : Optional.empty(),
                m.hasArchivedAt() ? Optional.of(instant(m.getArchivedAt())) : Optional.empty(),
                error != null ? Optional.of(error.getStringValue()) : Optional.empty());
    }

    static Instant instant(Timestamp t) {
        return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
    }
}
