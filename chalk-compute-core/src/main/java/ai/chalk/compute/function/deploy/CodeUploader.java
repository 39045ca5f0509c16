package ai.chalk.compute.function.deploy;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobResponse;
import com.google.protobuf.ByteString;
import io.grpc.Channel;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Uploads a {@link CodeSnapshot} through {@code chalk_compute.blob.v1.BlobService}: asks which blobs the server lacks
 * ({@code FindMissingBlobs}) and streams only those, in 256 KiB chunks sent as fast as the server takes them, so
 * memory stays bounded whatever the jar sizes. Thread-safe.
 */
public final class CodeUploader {

    private static final int CHUNK = 256 * 1024;

    private final Channel channel;

    /**
     * An uploader over a channel to the server.
     *
     * @param channel the channel
     */
    public CodeUploader(Channel channel) {
        this.channel = Objects.requireNonNull(channel, "channel");
    }

    /**
     * An uploader over a client's connection.
     *
     * @param client the client
     * @return the uploader
     */
    public static CodeUploader of(ai.chalk.compute.sandbox.SandboxClient client) {
        return new CodeUploader(client.channel());
    }

    /**
     * Uploads what the server lacks of a snapshot: its entries and its manifest.
     *
     * @param code the snapshot
     * @return what was sent
     * @throws ChalkComputeException when the server refuses a blob or cannot be reached
     * @throws UncheckedIOException  when an entry's file cannot be read
     */
    public UploadResult upload(CodeSnapshot code) {
        Map<String, Blob> blobs = new LinkedHashMap<>();
        for (CodeEntry entry : code.entries()) {
            blobs.putIfAbsent(
                    entry.digest(),
                    new Blob(ref(entry.digest(), entry.size()), () -> Files.newInputStream(entry.blob())));
        }
        byte[] manifest = code.manifest();
        blobs.putIfAbsent(
                code.digest(), new Blob(ref(code.digest(), manifest.length), () -> new ByteArrayInputStream(manifest)));
        List<BlobRef> missing;
        try {
            missing = BlobServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                            .addAllBlobs(blobs.values().stream().map(Blob::ref).toList())
                            .build())
                    .getMissingList();
        } catch (StatusRuntimeException e) {
            throw ChalkComputeException.from(e);
        }
        List<String> uploaded = new ArrayList<>();
        long bytes = 0;
        for (BlobRef ref : missing) {
            Blob blob = blobs.get(ref.getDigest());
            if (blob == null) {
                continue; // the server named a blob we did not ask about
            }
            send(blob);
            uploaded.add(ref.getDigest());
            bytes += ref.getSize();
        }
        return new UploadResult(uploaded, bytes);
    }

    private void send(Blob blob) {
        CompletableFuture<UploadBlobResponse> done = new CompletableFuture<>();
        Object readiness = new Object();
        var observer = new ClientResponseObserver<UploadBlobRequest, UploadBlobResponse>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<UploadBlobRequest> requests) {
                requests.setOnReadyHandler(() -> {
                    synchronized (readiness) {
                        readiness.notifyAll();
                    }
                });
            }

            @Override
            public void onNext(UploadBlobResponse value) {
                done.complete(value);
            }

            @Override
            public void onError(Throwable t) {
                done.completeExceptionally(t);
                synchronized (readiness) {
                    readiness.notifyAll();
                }
            }

            @Override
            public void onCompleted() {
                done.complete(null);
            }
        };
        var requests = (ClientCallStreamObserver<UploadBlobRequest>)
                BlobServiceGrpc.newStub(channel).uploadBlob(observer);
        try (InputStream in = blob.open().open()) {
            requests.onNext(UploadBlobRequest.newBuilder().setBlob(blob.ref()).build());
            byte[] buffer = new byte[CHUNK];
            for (int n; (n = in.readNBytes(buffer, 0, CHUNK)) > 0; ) {
                awaitReady(requests, done, readiness);
                requests.onNext(UploadBlobRequest.newBuilder()
                        .setData(ByteString.copyFrom(buffer, 0, n))
                        .build());
            }
            requests.onCompleted();
        } catch (IOException e) {
            requests.cancel("the blob could not be read", e);
            throw new UncheckedIOException("cannot read " + blob.ref().getDigest() + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            requests.cancel("interrupted", e);
            Thread.currentThread().interrupt();
            throw new ChalkComputeException(io.grpc.Status.Code.CANCELLED, "the upload was interrupted", e);
        }
        try {
            done.get(10, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            throw ChalkComputeException.from(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ChalkComputeException(io.grpc.Status.Code.CANCELLED, "the upload was interrupted", e);
        } catch (TimeoutException e) {
            throw new ChalkComputeException(
                    io.grpc.Status.Code.DEADLINE_EXCEEDED,
                    "the server did not confirm blob " + blob.ref().getDigest() + " within 10 minutes",
                    e);
        }
    }

    private static void awaitReady(
            ClientCallStreamObserver<UploadBlobRequest> requests,
            CompletableFuture<UploadBlobResponse> done,
            Object readiness)
            throws InterruptedException {
        synchronized (readiness) {
            while (!requests.isReady() && !done.isDone()) {
                readiness.wait(100);
            }
        }
        if (done.isCompletedExceptionally()) {
            try {
                done.join();
            } catch (java.util.concurrent.CompletionException e) {
                throw ChalkComputeException.from(e.getCause());
            }
        }
    }

    private static BlobRef ref(String digest, long size) {
        return BlobRef.newBuilder().setDigest(digest).setSize(size).build();
    }

    private interface Source {
        InputStream open() throws IOException;
    }

    private record Blob(BlobRef ref, Source open) {}
}
