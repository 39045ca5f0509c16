package ai.chalk.compute.function.deploy;

import java.util.List;

/**
 * What {@link CodeUploader#upload(CodeSnapshot)} sent.
 *
 * @param uploaded the digests of the blobs the server lacked and received, in order
 * @param bytes    their total size
 */
public record UploadResult(List<String> uploaded, long bytes) {

    /** Copies the list. */
    public UploadResult {
        uploaded = List.copyOf(uploaded);
    }
}
