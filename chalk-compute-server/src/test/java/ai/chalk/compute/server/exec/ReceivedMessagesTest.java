package ai.chalk.compute.server.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Test;

/**
 * The shares of the received-messages budget, through the tracer calls gRPC's transport makes (the whole path, with a
 * real server and a slow relay, is in {@link ServerMemorySecurityTest}): one caller fills at most its share and then
 * holds back only itself, callers are told apart by their credential, and the credential never shows in the error.
 */
class ReceivedMessagesTest {

    private static final long MIB = 1 << 20;
    private static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    private final ByteBudget budget = new ByteBudget("messages being received", 100 * MIB);
    private final ReceivedMessages received = new ReceivedMessages(budget);

    @Test
    void aCallerPastItsShareFailsWhileAnotherCallerStillGetsTheRest() {
        assertThat(received.share()).isEqualTo(50 * MIB);
        ServerStreamTracer first = call("Bearer hostile-token");
        ServerStreamTracer second = call("Bearer hostile-token");
        first.inboundWireSize(31 * MIB); // 30 MiB counted
        assertThatThrownBy(() -> second.inboundWireSize(22 * MIB))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                    assertThat(e.getStatus().getDescription())
                            .contains("PutFile", "23068672 bytes so far", "at most 52428800 of them from one caller")
                            .doesNotContain("hostile-token");
                });
        assertThat(budget.used()).as("the failed call let its bytes go").isEqualTo(30 * MIB);

        ServerStreamTracer other = call("Bearer other-token");
        other.inboundWireSize(41 * MIB);
        assertThat(budget.used()).isEqualTo(70 * MIB);

        first.streamClosed(Status.CANCELLED);
        other.inboundMessageRead(0, 41 * MIB, 41 * MIB);
        assertThat(budget.used()).isZero();
        // the share is whole again once the caller's messages are done
        ServerStreamTracer again = call("Bearer hostile-token");
        again.inboundWireSize(51 * MIB);
        again.streamClosed(Status.OK);
        assertThat(budget.used()).isZero();
    }

    @Test
    void callsWithoutACredentialAreOneCaller() {
        ServerStreamTracer first = call(null);
        first.inboundWireSize(41 * MIB);
        assertThatThrownBy(() -> call(null).inboundWireSize(12 * MIB)).isInstanceOf(StatusRuntimeException.class);
        call("Bearer a-token").inboundWireSize(41 * MIB);
        assertThat(budget.used()).isEqualTo(80 * MIB);
    }

    @Test
    void aBudgetForLessThanTwoLargestMessagesLetsOneCallerHoldOneWhole() {
        ReceivedMessages small = new ReceivedMessages(new ByteBudget("messages being received", 40 * MIB));
        assertThat(small.share()).isEqualTo(32 * MIB);
        ReceivedMessages tiny = new ReceivedMessages(new ByteBudget("messages being received", 8 * MIB));
        assertThat(tiny.share()).isEqualTo(8 * MIB);
    }

    private ServerStreamTracer call(String credential) {
        Metadata headers = new Metadata();
        if (credential != null) {
            headers.put(AUTHORIZATION, credential);
        }
        return received.newServerStreamTracer("chalk.volume.v1.VolumeService/PutFile", headers);
    }
}
