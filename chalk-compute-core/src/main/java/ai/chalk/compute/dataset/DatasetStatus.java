package ai.chalk.compute.dataset;

import ai.chalk.compute.proto.server.v1.DatasetRevisionStatus;

/** Where a dataset revision stands. */
public enum DatasetStatus {
    /** Waiting to be computed (Chalk's offline queries; an upload is never queued). */
    QUEUED,
    /** Its files are being checked and converted; not readable yet. */
    WORKING,
    /** Its files are in place: it can be downloaded and queried. */
    COMPLETED,
    /** It will never be readable; {@link DatasetRevision#error()} says why. */
    FAILED,
    /** It was canceled before it completed. */
    CANCELED,
    /** The server did not say. */
    UNKNOWN;

    static DatasetStatus of(DatasetRevisionStatus s) {
        return switch (s) {
            case DATASET_REVISION_STATUS_QUEUED -> QUEUED;
            case DATASET_REVISION_STATUS_WORKING -> WORKING;
            case DATASET_REVISION_STATUS_COMPLETED -> COMPLETED;
            case DATASET_REVISION_STATUS_FAILED -> FAILED;
            case DATASET_REVISION_STATUS_CANCELED -> CANCELED;
            default -> UNKNOWN;
        };
    }
}
