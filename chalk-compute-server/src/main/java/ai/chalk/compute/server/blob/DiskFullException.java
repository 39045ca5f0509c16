package ai.chalk.compute.server.blob;

import java.io.IOException;

/**
 * A blob not stored because the server's disk would be left with less than it keeps free for itself (its store, logs
 * and the host): uploads cannot fill the disk. Answered {@code RESOURCE_EXHAUSTED} (HTTP 507); nothing of the blob
 * stays.
 */
public final class DiskFullException extends IOException {
    private static final long serialVersionUID = 1L;

    DiskFullException(String message) {
        super(message);
    }
}
