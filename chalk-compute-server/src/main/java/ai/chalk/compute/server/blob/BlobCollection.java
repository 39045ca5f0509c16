package ai.chalk.compute.server.blob;

import ai.chalk.compute.server.store.BlobOwnerStore;
import java.io.IOException;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * Collects the blobs nothing refers to. An environment's blob that none of its records refer to (function versions not
 * deleted, dataset revisions and open uploads, kept query results), and that it has neither stored nor asked about for
 * a while, stops counting against its blob storage; once no environment owns a blob and nothing refers to it, its file
 * is deleted. Without this, a tenant that deleted what it deployed kept its storage full for good, and the disk only
 * ever filled.
 */
public final class BlobCollection {

    /** What some kind of record refers to: it gives each environment and digest (hex) to its argument. */
    @FunctionalInterface
    public interface References {
        void each(BiConsumer<String, String> environmentAndDigest);
    }

    /** What a collection did. */
    public record Collected(int released, long releasedBytes, int deleted, long deletedBytes) {}

    private final BlobStore blobs;
    private final BlobOwnerStore owners;
    private final List<References> references;

    public BlobCollection(BlobStore blobs, BlobOwnerStore owners, List<References> references) {
        this.blobs = blobs;
        this.owners = owners;
        this.references = List.copyOf(references);
    }

    /**
     * Releases each environment's blobs that it has not stored or asked about since {@code cutoff} and that none of its
     * records refer to, then deletes the files, stored before {@code cutoff}, that no environment owns any more and
     * nothing refers to. The references are read before anything is released: a record made later refers to blobs its
     * environment asked about or stored while making it, after {@code cutoff}, which are kept.
     *
     * @throws IOException when a file could not be deleted (the others were)
     */
    public synchronized Collected collect(Instant cutoff) throws IOException {
        Map<String, Set<String>> referenced = new HashMap<>();
        Set<String> referencedByAny = new HashSet<>();
        for (References r : references) {
            r.each((environment, hex) -> {
                referenced.computeIfAbsent(environment, e -> new HashSet<>()).add(hex);
                referencedByAny.add(hex);
            });
        }
        int released = 0;
        long releasedBytes = 0;
        Map<String, Long> orphans = new HashMap<>();
        for (BlobOwnerStore.Owned blob : owners.unusedSince(cutoff)) {
            if (referenced.getOrDefault(blob.environment(), Set.of()).contains(blob.digestHex())
                    || !owners.release(blob, cutoff)) {
                continue;
            }
            released++;
            releasedBytes += blob.size();
            if (!referencedByAny.contains(blob.digestHex())) {
                orphans.put(blob.digestHex(), blob.size());
            }
        }
        // and the files no environment owns that nothing refers to: one whose deletion failed before, or whose last
        // owner was released by a run that stopped before deleting it, or that only another environment referred to
        Set<String> owned = owners.ownedDigests(); // deleting one checks again, under the store's lock
        for (String hex : blobs.digests()) {
            if (!referencedByAny.contains(hex) && !orphans.containsKey(hex) && !owned.contains(hex)) {
                BlobDigest digest = new BlobDigest(hex);
                if (blobs.lastModified(digest).isBefore(cutoff)) {
                    orphans.put(hex, blobs.size(digest).orElse(0));
                }
            }
        }
        int deleted = 0;
        long deletedBytes = 0;
        IOException failed = null;
        for (Map.Entry<String, Long> orphan : orphans.entrySet()) {
            try {
                if (blobs.deleteUnowned(new BlobDigest(orphan.getKey()))) {
                    deleted++;
                    deletedBytes += orphan.getValue();
                }
            } catch (IOException e) {
                failed = e; // the others are deleted all the same; this one is found again next time
            }
        }
        if (failed != null) {
            throw failed;
        }
        return new Collected(released, releasedBytes, deleted, deletedBytes);
    }
}
