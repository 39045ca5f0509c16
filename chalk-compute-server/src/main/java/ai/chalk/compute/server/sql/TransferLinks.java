package ai.chalk.compute.server.sql;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.http.Transfers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Result links served by the server's HTTP port: {@code part-00000.parquet}, ... each signed for {@code ttl} (the
 * server's {@code --transfer-link-ttl}). */
public final class TransferLinks implements ResultLinks {

    private final Transfers transfers;
    private final Duration ttl;

    public TransferLinks(Transfers transfers, Duration ttl) {
        this.transfers = transfers;
        this.ttl = ttl;
    }

    @Override
    public List<String> links(List<BlobDigest> shards) {
        List<String> links = new ArrayList<>();
        for (int i = 0; i < shards.size(); i++) {
            links.add(transfers.downloadUrl(shards.get(i), String.format("part-%05d.parquet", i), ttl));
        }
        return links;
    }
}
