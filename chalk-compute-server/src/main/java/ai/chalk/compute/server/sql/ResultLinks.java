package ai.chalk.compute.server.sql;

import ai.chalk.compute.server.blob.BlobDigest;
import java.util.List;

/** Signed, expiring download links to result shards in the blob store, one object per link. */
public interface ResultLinks {

    /** A link for each shard, in order; a client that finds one expired asks again (PollSqlQuery). */
    List<String> links(List<BlobDigest> shards);
}
