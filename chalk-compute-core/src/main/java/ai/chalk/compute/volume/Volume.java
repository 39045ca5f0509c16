package ai.chalk.compute.volume;

import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.proto.volume.v1.GetFileRequest;
import ai.chalk.compute.proto.volume.v1.ListFilesRequest;
import ai.chalk.compute.proto.volume.v1.PutFileRequest;
import ai.chalk.compute.proto.volume.v1.RemoveFileRequest;
import ai.chalk.compute.proto.volume.v1.VolumeInfo;
import com.google.protobuf.ByteString;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;

/**
 * A named volume on the server. Its files can be read and written here directly (whole files,
 * up to 32 MiB each) or by any sandbox that mounts it. Paths are relative to the volume's root;
 * {@code ..} and symbolic links are refused.
 */
public final class Volume {

    private final Volumes volumes;
    private final String name;
    private final Instant createdAt;

    Volume(Volumes volumes, VolumeInfo info) {
        this.volumes = volumes;
        this.name = info.getName();
        this.createdAt = Volumes.instant(info.getCreatedAt());
    }

    /** The volume's name, used to mount it. */
    public String name() {
        return name;
    }

    /** When the volume was created. */
    public Instant createdAt() {
        return createdAt;
    }

    /** Every file in the volume, sorted by path. */
    public List<VolumeFile> files() {
        return files("");
    }

    /**
     * The files whose path starts with {@code prefix}, sorted by path.
     *
     * @param prefix e.g. {@code "data/"}
     * @return the files
     */
    public List<VolumeFile> files(String prefix) {
        return ServerCall.run(
                        ResourceKind.VOLUME,
                        () -> volumes.stub()
                                .listFiles(ListFilesRequest.newBuilder()
                                        .setVolumeName(name)
                                        .setPrefix(prefix)
                                        .build()))
                .getFilesList()
                .stream()
                .map(f -> new VolumeFile(f.getPath(), f.getSize(), Volumes.instant(f.getUpdatedAt())))
                .toList();
    }

    /**
     * A file's content.
     *
     * @param path the file's path in the volume
     * @return its bytes
     * @throws ai.chalk.compute.error.VolumeNotFoundException when there is no such file
     */
    public byte[] readBytes(String path) {
        return ServerCall.run(
                        ResourceKind.VOLUME,
                        () -> volumes.stub()
                                .getFile(GetFileRequest.newBuilder()
                                        .setVolumeName(name)
                                        .setPath(path)
                                        .build()))
                .getData()
                .toByteArray();
    }

    /** A file's content as UTF-8 text; see {@link #readBytes(String)}. */
    public String readText(String path) {
        return new String(readBytes(path), StandardCharsets.UTF_8);
    }

    /**
     * Writes a whole file, replacing it atomically if it exists; parent directories are created.
     *
     * @param path the file's path in the volume
     * @param data its new content
     */
    public void writeBytes(String path, byte[] data) {
        ServerCall.run(
                ResourceKind.VOLUME,
                () -> volumes.stub()
                        .putFile(PutFileRequest.newBuilder()
                                .setVolumeName(name)
                                .setPath(path)
                                .setData(ByteString.copyFrom(data))
                                .build()));
    }

    /** Writes a whole file as UTF-8 text; see {@link #writeBytes(String, byte[])}. */
    public void writeText(String path, String text) {
        writeBytes(path, text.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Removes a file.
     *
     * @param path the file's path in the volume
     * @throws ai.chalk.compute.error.VolumeNotFoundException when there is no such file
     */
    public void remove(String path) {
        ServerCall.run(
                ResourceKind.VOLUME,
                () -> volumes.stub()
                        .removeFile(RemoveFileRequest.newBuilder()
                                .setVolumeName(name)
                                .setPath(path)
                                .build()));
    }

    /** Deletes the volume and its files. */
    public void delete() {
        volumes.delete(name);
    }

    @Override
    public String toString() {
        return "Volume[" + name + "]";
    }
}
