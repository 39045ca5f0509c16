package ai.chalk.compute.volume;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.error.VolumeNotFoundException;
import ai.chalk.compute.proto.volume.v1.CreateVolumeRequest;
import ai.chalk.compute.proto.volume.v1.DeleteVolumeRequest;
import ai.chalk.compute.proto.volume.v1.GetVolumeRequest;
import ai.chalk.compute.proto.volume.v1.ListVolumesRequest;
import ai.chalk.compute.proto.volume.v1.ListVolumesResponse;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc;
import io.grpc.Channel;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The volumes of a server: create, find, list and delete them. Get one from
 * {@code SandboxClient#volumes()}.
 *
 * <pre>{@code
 * Volume cache = client.volumes().create("build-cache");
 * cache.writeText("notes/todo.txt", "ship it");
 * Sandbox sandbox = client.create(Sandbox.builder().mountVolume("build-cache", "/cache"));
 * }</pre>
 */
public final class Volumes {

    /** Largest message a volume call receives: a whole file of up to 32 MiB, and its envelope. */
    static final int MAX_MESSAGE_BYTES = 33 << 20;

    private final VolumeServiceGrpc.VolumeServiceBlockingStub stub;

    /** Volumes on the server behind {@code channel}; the channel stays the caller's. */
    public Volumes(Channel channel) {
        this.stub = VolumeServiceGrpc.newBlockingStub(Objects.requireNonNull(channel, "channel"))
                .withMaxInboundMessageSize(MAX_MESSAGE_BYTES)
                .withMaxOutboundMessageSize(MAX_MESSAGE_BYTES);
    }

    /**
     * Creates an empty volume.
     *
     * @param name 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit
     * @return the volume
     * @throws ChalkComputeException with status {@code ALREADY_EXISTS} when the name is taken
     */
    public Volume create(String name) {
        return new Volume(
                this,
                ServerCall.run(
                                ResourceKind.VOLUME,
                                () -> stub.createVolume(CreateVolumeRequest.newBuilder()
                                        .setName(name)
                                        .build()))
                        .getVolume());
    }

    /**
     * The volume with this name.
     *
     * @param name the volume's name
     * @return the volume
     * @throws VolumeNotFoundException when there is none
     */
    public Volume get(String name) {
        return new Volume(
                this,
                ServerCall.run(
                                ResourceKind.VOLUME,
                                () -> stub.getVolume(GetVolumeRequest.newBuilder()
                                        .setName(name)
                                        .build()))
                        .getVolume());
    }

    /** Every volume, in name order (all pages). */
    public List<Volume> list() {
        List<Volume> out = new ArrayList<>();
        String token = "";
        do {
            ListVolumesRequest request = ListVolumesRequest.newBuilder()
                    .setPageSize(500)
                    .setPageToken(token)
                    .build();
            ListVolumesResponse page = ServerCall.run(ResourceKind.VOLUME, () -> stub.listVolumes(request));
            page.getVolumesList().forEach(v -> out.add(new Volume(this, v)));
            token = page.getNextPageToken();
        } while (!token.isEmpty());
        return out;
    }

    /**
     * Deletes a volume and every file in it.
     *
     * @param name the volume's name
     * @throws VolumeNotFoundException when there is none
     * @throws ai.chalk.compute.error.FailedPreconditionException while a running sandbox mounts it
     */
    public void delete(String name) {
        ServerCall.run(
                ResourceKind.VOLUME,
                () -> stub.deleteVolume(
                        DeleteVolumeRequest.newBuilder().setName(name).build()));
    }

    VolumeServiceGrpc.VolumeServiceBlockingStub stub() {
        return stub;
    }

    static Instant instant(com.google.protobuf.Timestamp t) {
        return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
    }
}
