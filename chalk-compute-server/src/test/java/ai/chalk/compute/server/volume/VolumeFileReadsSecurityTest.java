package ai.chalk.compute.server.volume;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.volume.v1.CreateVolumeRequest;
import ai.chalk.compute.proto.volume.v1.GetFileRequest;
import ai.chalk.compute.proto.volume.v1.GetFileResponse;
import ai.chalk.compute.proto.volume.v1.PutFileRequest;
import ai.chalk.compute.proto.volume.v1.VolumeServiceGrpc;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.exec.ByteBudget;
import com.google.protobuf.ByteString;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant asks for its largest volume files (32 MiB each) again and again without reading the answers: each was read
 * whole into the heap and copied into its answer, which waits in the server for as long as the client does not take
 * it (in direct buffers over TCP, on the heap in-process), without bound. The bytes read for GetFile are now held
 * against a budget (an eighth of the heap) until each call is over; past it, RESOURCE_EXHAUSTED saying so.
 */
class VolumeFileReadsSecurityTest {

    @Test
    void filesReadForGetFileAreHeldAgainstABudgetUntilTheirCallsEnd(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ByteBudget reads = server.server.memoryBudgets().volumeFileReads();
            // 16 MiB files, or smaller ones where the heap is small: three held leave room in the budget
            int size = (int) Math.min(16 << 20, reads.limit() / 8);
            List<ClientCall<GetFileRequest, GetFileResponse>> unread = new ArrayList<>();
            try {
                var volumes = VolumeServiceGrpc.newBlockingStub(dev)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .withMaxInboundMessageSize(64 << 20);
                volumes.createVolume(
                        CreateVolumeRequest.newBuilder().setName("big").build());
                byte[] bytes = new byte[size];
                new java.util.Random(7).nextBytes(bytes);
                volumes.putFile(PutFileRequest.newBuilder()
                        .setVolumeName("big")
                        .setPath("f")
                        .setData(ByteString.copyFrom(bytes))
                        .build());

                // clients that do not read: their answers wait in the server, and so do the bytes read for them
                for (int i = 0; i < 3; i++) {
                    unread.add(unreadGetFile(dev));
                }
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> reads.used() == 3L * size);

                // the rest of the budget held, as by as many more such clients: the next read is refused, not done
                long rest = reads.limit() - reads.used() - size / 2;
                assertThat(reads.tryReserve(rest)).isTrue();
                try {
                    StatusRuntimeException refused = catchThrowableOfType(
                            () -> volumes.getFile(GetFileRequest.newBuilder()
                                    .setVolumeName("big")
                                    .setPath("f")
                                    .build()),
                            StatusRuntimeException.class);
                    assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                    assertThat(refused.getStatus().getDescription())
                            .startsWith("the server holds " + (3L * size + rest)
                                    + " bytes of volume files read for GetFile for other calls, and \"f\" (" + size
                                    + " bytes) would take it past its " + reads.limit());
                } finally {
                    reads.release(rest);
                }

                // calls that end give their bytes back; one read whole holds none once answered
                unread.forEach(c -> c.cancel("the test is done with it", null));
                unread.clear();
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> reads.used() == 0);
                assertThat(volumes.getFile(GetFileRequest.newBuilder()
                                        .setVolumeName("big")
                                        .setPath("f")
                                        .build())
                                .getData()
                                .toByteArray())
                        .isEqualTo(bytes);
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> reads.used() == 0);
            } finally {
                unread.forEach(c -> c.cancel("the test is over", null));
                dev.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        }
    }

    /** A GetFile whose client never asks for the answer. */
    private static ClientCall<GetFileRequest, GetFileResponse> unreadGetFile(ManagedChannel channel) {
        ClientCall<GetFileRequest, GetFileResponse> call =
                channel.newCall(VolumeServiceGrpc.getGetFileMethod(), CallOptions.DEFAULT);
        call.start(new ClientCall.Listener<>() {}, new Metadata());
        call.sendMessage(
                GetFileRequest.newBuilder().setVolumeName("big").setPath("f").build());
        call.halfClose();
        return call;
    }
}
