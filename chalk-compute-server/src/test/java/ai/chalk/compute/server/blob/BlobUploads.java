package ai.chalk.compute.server.blob;

import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.UploadBlobRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobResponse;
import com.google.protobuf.ByteString;
import io.grpc.Channel;
import io.grpc.stub.StreamObserver;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;

/** Blob uploads through the generated stub, as a client without the SDK makes them. */
public final class BlobUploads {

    private BlobUploads() {}

    /** The reference of {@code bytes}: their SHA-256 and size. */
    public static BlobRef ref(byte[] bytes) {
        try {
            return BlobRef.newBuilder()
                    .setDigest("sha256:"
                            + HexFormat.of()
                                    .formatHex(
                                            MessageDigest.getInstance("SHA-256").digest(bytes)))
                    .setSize(bytes.length)
                    .build();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    /** An upload under way: what the client sends, and the call's result. */
    public record Open(StreamObserver<UploadBlobRequest> requests, CompletableFuture<UploadBlobResponse> result) {}

    /** Starts an upload announced as {@code announced}; nothing more is sent. */
    public static Open open(Channel channel, BlobRef announced) {
        CompletableFuture<UploadBlobResponse> result = new CompletableFuture<>();
        StreamObserver<UploadBlobRequest> requests = BlobServiceGrpc.newStub(channel)
                .uploadBlob(new StreamObserver<>() {
                    @Override
                    public void onNext(UploadBlobResponse value) {
                        result.complete(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                        result.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {}
                });
        requests.onNext(UploadBlobRequest.newBuilder().setBlob(announced).build());
        return new Open(requests, result);
    }

    /** Uploads {@code bytes} announced as {@code announced}, in 64 KiB messages; the call's result. */
    public static CompletableFuture<UploadBlobResponse> upload(Channel channel, BlobRef announced, byte[] bytes) {
        Open upload = open(channel, announced);
        for (int off = 0; off < bytes.length; off += 65536) {
            upload.requests()
                    .onNext(UploadBlobRequest.newBuilder()
                            .setData(ByteString.copyFrom(bytes, off, Math.min(65536, bytes.length - off)))
                            .build());
        }
        upload.requests().onCompleted();
        return upload.result();
    }

    /** {@code size} bytes of noise, the same for the same seed. */
    public static byte[] random(int size, long seed) {
        byte[] bytes = new byte[size];
        new java.util.Random(seed).nextBytes(bytes);
        return bytes;
    }

    /** Uploads {@code bytes}; whether the server says they were newly stored for the caller. */
    public static boolean stored(Channel channel, byte[] bytes) throws Exception {
        return upload(channel, ref(bytes), bytes)
                .get(30, java.util.concurrent.TimeUnit.SECONDS)
                .getStored();
    }

    /** Uploads {@code bytes}, which the server must refuse; its status. */
    public static io.grpc.Status refusal(Channel channel, byte[] bytes) throws Exception {
        try {
            upload(channel, ref(bytes), bytes).get(30, java.util.concurrent.TimeUnit.SECONDS);
            throw new AssertionError("the upload was stored");
        } catch (java.util.concurrent.ExecutionException e) {
            return io.grpc.Status.fromThrowable(e.getCause());
        }
    }
}
