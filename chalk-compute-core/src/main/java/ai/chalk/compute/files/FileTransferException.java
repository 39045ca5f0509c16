package ai.chalk.compute.files;

import io.grpc.Status;

/**
 * An upload or download did not transfer the whole file: the number of bytes sent or received differs
 * from the size of the file in the sandbox (for example because something else changed the file
 * during the transfer). Reported with status {@code DATA_LOSS}.
 */
public class FileTransferException extends SandboxFileException {

    private static final long serialVersionUID = 1L;

    private final long transferredBytes;
    private final long sandboxFileSize;

    /**
     * Creates the exception.
     *
     * @param operation        {@code "upload to"} or {@code "download"}
     * @param path             the file in the sandbox
     * @param transferredBytes the bytes sent (upload) or received (download)
     * @param sandboxFileSize  the size of the file in the sandbox
     */
    public FileTransferException(String operation, String path, long transferredBytes, long sandboxFileSize) {
        super(
                Status.Code.DATA_LOSS,
                operation,
                path,
                "transferred " + transferredBytes + " bytes but the file in the sandbox has " + sandboxFileSize,
                "");
        this.transferredBytes = transferredBytes;
        this.sandboxFileSize = sandboxFileSize;
    }

    /** The bytes sent (upload) or received (download). */
    public long transferredBytes() {
        return transferredBytes;
    }

    /** The size of the file in the sandbox when the transfer ended. */
    public long sandboxFileSize() {
        return sandboxFileSize;
    }
}
