package ai.chalk.compute.server.http;

import ai.chalk.compute.server.blob.BlobDigest;
import java.util.Optional;

/**
 * Where the uploads of one kind go (dataset files, ...): asked what an object must be before its bytes are read, and
 * told once they are stored in the blob store. A signed upload link names the target and the object; the target
 * decides whether that object still takes bytes.
 */
public interface UploadTarget {

    /**
     * What the object {@code objectId} must be.
     *
     * @throws TransferRefusedException when it takes no upload now (unknown, already uploaded, its session over)
     */
    Expected expect(String objectId) throws TransferRefusedException;

    /**
     * The object's bytes are in the blob store under {@code digest}.
     *
     * @throws TransferRefusedException when it can no longer be recorded (its session ended meanwhile)
     */
    void stored(String objectId, BlobDigest digest, long size) throws TransferRefusedException;

    /**
     * What an upload must be.
     *
     * @param size        its exact length in bytes
     * @param digest      its SHA-256, when the client announced one
     * @param environment whose upload it is: its blobs count against that environment's storage
     */
    record Expected(long size, Optional<BlobDigest> digest, String environment) {}
}
