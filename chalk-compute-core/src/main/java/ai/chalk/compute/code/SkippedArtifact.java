package ai.chalk.compute.code;

/**
 * A result the server did not send, as {@code ExecutePython} reports it.
 *
 * @param name     the artifact's name ({@code result.html}, {@code figure-1.png})
 * @param reason   why ({@code larger than max_artifact_bytes (1000)})
 * @param byteSize its size
 */
public record SkippedArtifact(String name, String reason, long byteSize) {}
