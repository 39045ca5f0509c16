package ai.chalk.compute.server.blob;

import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.DownloadBlobRequest;
import ai.chalk.compute.proto.blob.v1.DownloadBlobResponse;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsRequest;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsResponse;
import ai.chalk.compute.proto.blob.v1.UploadBlobRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.BlobOwnerStore;
import ai.chalk.compute.server.threads.EnvironmentShares;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * {@code chalk_compute.blob.v1.BlobService} over a {@link BlobStore}, per environment ({@link Caller}): bytes are kept
 * once, but an environment finds present, downloads and deploys only the blobs it has uploaded itself. Another
 * environment holding the same bytes changes nothing it can see: they are missing until it uploads them too, its
 * upload is {@code stored}, and downloading them is NOT_FOUND.
 */
public final class BlobServiceV1 extends BlobServiceGrpc.BlobServiceImplBase {

    /** Largest blob accepted: a function's jar or class directory archive, with room to spare. */
    public static final long MAX_BLOB_BYTES = 4L << 30;

    private static final int CHUNK = 256 * 1024;
    private static final int MAX_REFS = 10_000;

    /**
     * Uploads open at once, server-wide: each holds a file descriptor of the server's from its announcement to its
     * end, and a tenant opening uploads by the thousand without finishing them ran the server out of descriptors for
     * every tenant's sandboxes and commands. One environment has at most half.
     */
    public static final int MAX_OPEN_UPLOADS = 1024;

    private final BlobStore store;
    private final Optional<BlobOwnerStore> owners;
    private final EnvironmentShares openUploads = new EnvironmentShares("open uploads", MAX_OPEN_UPLOADS);

    /** The service of a server with environments: each sees the blobs it uploaded. */
    public BlobServiceV1(BlobStore store, BlobOwnerStore owners) {
        this.store = store;
        this.owners = Optional.of(owners);
    }

    /**
     * The service of a store without environments (a test's, or one tenant's embedding): every blob is every
     * caller's, and no caller is looked for in the call's context.
     */
    public BlobServiceV1(BlobStore store) {
        this.store = store;
        this.owners = Optional.empty();
    }

    /** The caller's environment, where there are environments. */
    private String environment() {
        return owners.isPresent() ? Caller.current().environment() : Caller.DEFAULT_ENVIRONMENT;
    }

    private boolean owns(String environment, BlobDigest digest) {
        return owners.map(o -> o.owns(environment, digest.hex())).orElse(true);
    }

    @Override
    public void findMissingBlobs(FindMissingBlobsRequest request, StreamObserver<FindMissingBlobsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            if (request.getBlobsCount() > MAX_REFS) {
                throw Status.INVALID_ARGUMENT
                        .withDescription("blobs: " + request.getBlobsCount() + " digests in one request; send at most "
                                + MAX_REFS + " at a time")
                        .asRuntimeException();
            }
            String environment = environment();
            var response = FindMissingBlobsResponse.newBuilder();
            for (int i = 0; i < request.getBlobsCount(); i++) {
                BlobRef ref = request.getBlobs(i);
                BlobDigest digest = BlobDigest.parse("blobs[" + i + "].digest", ref.getDigest());
                if (!owns(environment, digest) || !store.contains(digest, ref.getSize())) {
                    response.addMissing(ref);
                }
            }
            return response.build();
        });
    }

    private static String uploadRefusal(
            EnvironmentShares.Refusal refusal, EnvironmentShares openUploads, String environment) {
        return (refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                        ? "this environment has " + openUploads.held(environment) + " uploads open, the most one"
                                + " environment may (half of the " + MAX_OPEN_UPLOADS + " the server keeps open)"
                        : "the server has " + openUploads.held() + " uploads open, its limit")
                + ": finish or cancel some before starting more";
    }

    @Override
    public StreamObserver<UploadBlobRequest> uploadBlob(StreamObserver<UploadBlobResponse> observer) {
        String environment = environment();
        return new StreamObserver<>() {
            private BlobRef announced;
            private BlobDigest digest;
            private BlobStore.Upload upload;
            private boolean failed;
            private EnvironmentShares.@Nullable Place place;

            /** Gives back the upload's place; once, however the upload ends. */
            private void close() {
                if (place != null) {
                    place.close();
                }
            }

            @Override
            public void onNext(UploadBlobRequest part) {
                if (failed) {
                    return;
                }
                try {
                    switch (part.getPartCase()) {
                        case BLOB -> start(part.getBlob());
                        case DATA -> append(part.getData());
                        case PART_NOT_SET ->
                            throw Status.INVALID_ARGUMENT
                                    .withDescription("an UploadBlob message carries neither blob nor data")
                                    .asRuntimeException();
                    }
                } catch (DiskFullException e) {
                    fail(Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()));
                } catch (IOException e) {
                    fail(Status.UNAVAILABLE.withDescription("the server cannot write the blob: " + e.getMessage()));
                } catch (RuntimeException e) {
                    fail(StatusErrors.toStatus(e));
                }
            }

            private void start(BlobRef ref) throws IOException {
                if (announced != null) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription("blob: announced twice in one upload; upload one" + " blob per call")
                            .asRuntimeException();
                }
                digest = BlobDigest.parse("blob.digest", ref.getDigest());
                if (ref.getSize() > MAX_BLOB_BYTES) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription("blob.size: " + ref.getSize()
                                    + " bytes is more than this server keeps in one blob (" + MAX_BLOB_BYTES + ")")
                            .asRuntimeException();
                }
                upload = store.begin(ref.getSize(), environment, digest); // its bytes kept for it on disk, or refused
                place = openUploads.take(environment, BlobServiceV1::uploadRefusal);
                announced = ref;
            }

            private void append(ByteString data) throws IOException {
                if (upload == null) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription("data arrived before the blob was announced: send"
                                    + " the blob (digest and size) first")
                            .asRuntimeException();
                }
                if (upload.written() + data.size() > announced.getSize()) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription(
                                    "more bytes than the announced size " + announced.getSize() + " of " + digest)
                            .asRuntimeException();
                }
                byte[] bytes = data.toByteArray();
                upload.write(bytes, 0, bytes.length);
            }

            private void fail(Status status) {
                failed = true;
                if (upload != null) {
                    upload.abort();
                }
                close();
                observer.onError(status.asRuntimeException());
            }

            @Override
            public void onError(Throwable t) {
                if (upload != null) {
                    upload.abort();
                }
                close();
            }

            @Override
            public void onCompleted() {
                if (failed) {
                    return;
                }
                if (upload == null) {
                    observer.onError(Status.INVALID_ARGUMENT
                            .withDescription("the upload ended before a blob was" + " announced")
                            .asRuntimeException());
                    return;
                }
                try {
                    // stored as this environment sees it: whether the bytes were already on disk is another's business
                    boolean ownedBefore = owners.isPresent() && owns(environment, digest);
                    boolean written;
                    try {
                        written = upload.commit(digest, announced.getSize()); // recorded as the environment's
                    } finally {
                        close(); // before the answer: the client's next upload finds the place free
                    }
                    boolean stored = owners.isPresent() ? !ownedBefore : written;
                    owners.ifPresent(o -> o.own(environment, digest.hex(), announced.getSize()));
                    observer.onNext(UploadBlobResponse.newBuilder()
                            .setBlob(announced)
                            .setStored(stored)
                            .build());
                    observer.onCompleted();
                } catch (BlobStore.BlobMismatchException e) {
                    observer.onError(Status.DATA_LOSS
                            .withDescription(e.getMessage() + "; nothing was kept, upload it again")
                            .asRuntimeException());
                } catch (IOException e) {
                    observer.onError(Status.UNAVAILABLE
                            .withDescription("the server cannot store the blob: " + e.getMessage())
                            .asRuntimeException());
                } catch (RuntimeException e) {
                    observer.onError(StatusErrors.toStatus(e).asRuntimeException()); // the owner could not be recorded
                }
            }
        };
    }

    @Override
    public void downloadBlob(DownloadBlobRequest request, StreamObserver<DownloadBlobResponse> responses) {
        InputStream in;
        try {
            BlobDigest digest = BlobDigest.parse("digest", request.getDigest());
            if (!owns(environment(), digest) || store.size(digest).isEmpty()) {
                throw Status.NOT_FOUND
                        .withDescription("blob " + digest + " is not on this server")
                        .asRuntimeException();
            }
            in = store.open(digest);
        } catch (IOException e) {
            responses.onError(Status.NOT_FOUND
                    .withDescription("blob " + request.getDigest() + " cannot be read: " + e.getMessage())
                    .asRuntimeException());
            return;
        } catch (RuntimeException e) {
            responses.onError(StatusErrors.toStatus(e).asRuntimeException());
            return;
        }
        var call = (ServerCallStreamObserver<DownloadBlobResponse>) responses;
        // send while the client keeps up; resume when the transport says it is ready again
        Runnable pump = new Runnable() {
            private boolean finished;

            @Override
            public synchronized void run() {
                try {
                    while (!finished && call.isReady()) {
                        byte[] chunk = in.readNBytes(CHUNK);
                        if (chunk.length == 0) {
                            finished = true;
                            in.close();
                            call.onCompleted();
                            return;
                        }
                        call.onNext(DownloadBlobResponse.newBuilder()
                                .setData(ByteString.copyFrom(chunk))
                                .build());
                    }
                } catch (IOException e) {
                    finished = true;
                    closeQuietly(in);
                    call.onError(Status.DATA_LOSS
                            .withDescription("reading the blob failed: " + e.getMessage())
                            .asRuntimeException());
                } catch (RuntimeException e) {
                    finished = true;
                    closeQuietly(in);
                    throw e;
                }
            }
        };
        call.setOnCancelHandler(() -> closeQuietly(in));
        call.setOnReadyHandler(pump);
        pump.run();
    }

    private static void closeQuietly(InputStream in) {
        try {
            in.close();
        } catch (IOException ignored) {
            // a read-only file: nothing was lost by failing to close it
        }
    }
}
