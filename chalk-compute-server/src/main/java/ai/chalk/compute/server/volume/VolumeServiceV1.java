package ai.chalk.compute.server.volume;

import ai.chalk.compute.proto.volume.v1.CreateVolumeRequest;
import ai.chalk.compute.proto.volume.v1.CreateVolumeResponse;
import ai.chalk.compute.proto.volume.v1.DeleteVolumeRequest;
import ai.chalk.compute.proto.volume.v1.DeleteVolumeResponse;
import ai.chalk.compute.proto.volume.v1.FileInfo;
import ai.chalk.compute.proto.volume.v1.GetFileRequest;
import ai.chalk.compute.proto.volume.v1.GetFileResponse;
import ai.chalk.compute.proto.volume.v1.GetVolumeRequest;
import ai.chalk.compute.proto.volume.v1.GetVolumeResponse;
import ai.chalk.compute.proto.volume.v1.ListFilesRequest;
import ai.chalk.compute.proto.volume.v1.ListFilesResponse;
import ai.chalk.compute.proto.volume.v1.ListVolumesRequest;
import ai.chalk.compute.proto.volume.v1.ListVolumesResponse;
import ai.chalk.compute.proto.volume.v1.PutFileRequest;
import ai.chalk.compute.proto.volume.v1.PutFileResponse;
import ai.chalk.compute.proto.volume.v1.RemoveFileRequest;
import ai.chalk.compute.proto.volume.v1.RemoveFileResponse;
import ai.chalk.compute.proto.volume.v1.VolumeInfo;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.exec.ByteBudget;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.VolumeStore.VolumeRecord;
import com.google.protobuf.Timestamp;
import com.google.protobuf.UnsafeByteOperations;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code chalk.volume.v1.VolumeService}: volumes and the files in them, of the caller's environment ({@link Caller}):
 * another environment's volume of the same name is a different volume, and one only it has does not exist here.
 */
public final class VolumeServiceV1 extends VolumeServiceGrpc.VolumeServiceImplBase {

    private static final int DEFAULT_PAGE = 100;
    private static final int MAX_PAGE = 1000;

    private final VolumeManager volumes;
    private final VolumeUsers users;
    private final EnvironmentBytes fileReads;

    /**
     * @param fileReads the server-wide bound on file bytes read for GetFile and not yet sent
     *                  ({@code MemoryBudgets.volumeFileReads}), of which one environment holds at most half
     */
    public VolumeServiceV1(VolumeManager volumes, VolumeUsers users, ByteBudget fileReads) {
        this.fileReads = new EnvironmentBytes(fileReads);
        this.volumes = volumes;
        this.users = users;
    }

    @Override
    public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> CreateVolumeResponse.newBuilder()
                        .setVolume(info(volumes.create(environment(), request.getName())))
                        .build());
    }

    @Override
    public void getVolume(GetVolumeRequest request, StreamObserver<GetVolumeResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetVolumeResponse.newBuilder()
                        .setVolume(info(volumes.get(environment(), request.getName())))
                        .build());
    }

    @Override
    public void listVolumes(ListVolumesRequest request, StreamObserver<ListVolumesResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int size = request.getPageSize() == 0 ? DEFAULT_PAGE : request.getPageSize();
            if (size < 0 || size > MAX_PAGE) {
                throw Status.INVALID_ARGUMENT
                        .withDescription("page_size " + size + " is out of range: give 1 to " + MAX_PAGE + ", or 0 for "
                                + DEFAULT_PAGE)
                        .asRuntimeException();
            }
            List<VolumeRecord> page = volumes.list(environment(), request.getPageToken(), size + 1);
            ListVolumesResponse.Builder b = ListVolumesResponse.newBuilder();
            page.stream().limit(size).forEach(v -> b.addVolumes(info(v)));
            if (page.size() > size) {
                b.setNextPageToken(page.get(size - 1).name());
            }
            return b.build();
        });
    }

    @Override
    public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> observer) {
        StatusErrors.unary(observer, () -> {
            volumes.get(environment(), request.getName());
            List<String> mounting = users.sandboxesMounting(environment(), request.getName());
            if (!mounting.isEmpty()) {
                throw Status.FAILED_PRECONDITION
                        .withDescription("volume " + request.getName() + " is mounted by running sandbox(es) "
                                + mounting + "; terminate them first")
                        .asRuntimeException();
            }
            volumes.delete(environment(), request.getName());
            return DeleteVolumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void listFiles(ListFilesRequest request, StreamObserver<ListFilesResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String environment = environment();
            HeldUntilSent held = new HeldUntilSent(observer, environment);
            ListFilesResponse.Builder b = ListFilesResponse.newBuilder();
            List<VolumeManager.VolumeFile> files =
                    volumes.files(environment, request.getVolumeName(), request.getPrefix(), fileReads);
            held.keep(VolumeManager.LISTING_BYTES);
            files.forEach(f -> b.addFiles(
                    FileInfo.newBuilder().setPath(f.path()).setSize(f.size()).setUpdatedAt(timestamp(f.updatedAt()))));
            return b.build();
        });
    }

    @Override
    public void getFile(GetFileRequest request, StreamObserver<GetFileResponse> observer) {
        StatusErrors.unary(observer, () -> {
            if (request.getGetSignedUri()) {
                throw Status.FAILED_PRECONDITION
                        .withDescription("this server has no object storage to sign URIs"
                                + " for; ask for the data itself (get_signed_uri false)")
                        .asRuntimeException();
            }
            String environment = environment();
            HeldUntilSent held = new HeldUntilSent(observer, environment);
            byte[] data = volumes.read(environment, request.getVolumeName(), request.getPath(), fileReads);
            held.keep(data.length);
            return GetFileResponse.newBuilder()
                    .setData(UnsafeByteOperations.unsafeWrap(data)) // read for this answer alone: no second copy
                    .build();
        });
    }

    @Override
    public void putFile(PutFileRequest request, StreamObserver<PutFileResponse> observer) {
        StatusErrors.unary(observer, () -> {
            if (request.getContentCase() == PutFileRequest.ContentCase.STORAGE_OBJECT_ID) {
                throw Status.FAILED_PRECONDITION
                        .withDescription("this server has no object storage: send the"
                                + " file's data in the request instead of storage_object_id")
                        .asRuntimeException();
            }
            volumes.write(environment(), request.getVolumeName(), request.getPath(), request.getData());
            return PutFileResponse.getDefaultInstance();
        });
    }

    @Override
    public void removeFile(RemoveFileRequest request, StreamObserver<RemoveFileResponse> observer) {
        StatusErrors.unary(observer, () -> {
            volumes.remove(environment(), request.getVolumeName(), request.getPath());
            return RemoveFileResponse.getDefaultInstance();
        });
    }

    private static String environment() {
        return Caller.current().environment();
    }

    private static VolumeInfo info(VolumeRecord v) {
        return VolumeInfo.newBuilder()
                .setName(v.name())
                .setCreatedAt(timestamp(v.createdAt()))
                .build();
    }

    private static Timestamp timestamp(Instant t) {
        return Timestamp.newBuilder()
                .setSeconds(t.getEpochSecond())
                .setNanos(t.getNano())
                .build();
    }

    /**
     * Bytes of {@link #fileReads} an answer holds until its call is over: a client that does not read keeps its
     * answer queued in the server. The call's handlers are set as it begins, so that one cancelled while its answer is
     * read is seen.
     */
    private final class HeldUntilSent {
        private final AtomicLong bytes = new AtomicLong(); // -1 once the call is over
        private final String environment;

        HeldUntilSent(StreamObserver<?> observer, String environment) {
            this.environment = environment;
            ServerCallStreamObserver<?> call = (ServerCallStreamObserver<?>) observer;
            call.setOnCloseHandler(this::release);
            call.setOnCancelHandler(this::release);
        }

        /** {@code n} bytes reserved for the answer are held from now until the call is over. */
        void keep(long n) {
            if (!bytes.compareAndSet(0, n)) {
                fileReads.release(environment, n); // over already
            }
        }

        private void release() {
            long n = bytes.getAndSet(-1);
            if (n > 0) {
                fileReads.release(environment, n);
            }
        }
    }
}
