package ai.chalk.compute.server.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
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
    void tokensOfOneEnvironmentAreOneCallerHoweverTheyAreWritten() {
        // a tenant may ask for a new token per call, or write "bearer" for "Bearer": each text was a caller of its own
        ServerStreamTracer first = call("Bearer " + token("dev", "1"));
        first.inboundWireSize(41 * MIB);
        assertThatThrownBy(() -> call("Bearer " + token("dev", "2")).inboundWireSize(12 * MIB))
                .as("another token of the same environment")
                .isInstanceOf(StatusRuntimeException.class);
        assertThatThrownBy(() -> call("bearer " + token("dev", "1")).inboundWireSize(12 * MIB))
                .as("the same token, written otherwise")
                .isInstanceOf(StatusRuntimeException.class);
        call("Bearer " + token("prod", "3")).inboundWireSize(41 * MIB);
        assertThat(budget.used()).as("another environment still gets its share").isEqualTo(80 * MIB);
    }

    @Test
    void aTokenSentWithAnOpenMethodChargesNoEnvironment() {
        // the token exchange and health are never authenticated: a made-up token naming prod sent with them, its
        // message trickled in, filled prod's share
        Metadata forged = new Metadata();
        forged.put(AUTHORIZATION, "Bearer " + token("prod", "forged"));
        ServerStreamTracer open = received.newServerStreamTracer("chalk.server.v1.AuthService/GetToken", forged);
        open.inboundWireSize(4 << 10);
        call("Bearer " + token("prod", "real")).inboundWireSize(51 * MIB);
        assertThat(budget.used())
                .as("prod's whole share, untouched by the forged token")
                .isEqualTo(50 * MIB);
    }

    @Test
    void anOpenMethodsMessageIsSmall() {
        // anyone who reaches the port may call them: 33 MiB each, the first MiB uncounted, in thousands of calls
        ServerStreamTracer open = received.newServerStreamTracer("grpc.health.v1.Health/Check", new Metadata());
        open.inboundWireSize(8 << 10);
        assertThatThrownBy(() -> open.inboundWireSize(1)).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(e.getStatus().getDescription())
                    .isEqualTo("a request to grpc.health.v1.Health/Check may be at most 8192 bytes; this"
                            + " one is 8193 bytes so far");
        });
        assertThat(budget.used()).isZero();
    }

    @Test
    void aBudgetForLessThanTwoLargestMessagesLetsOneCallerHoldOneWhole() {
        ReceivedMessages small = new ReceivedMessages(new ByteBudget("messages being received", 40 * MIB));
        assertThat(small.share()).isEqualTo(32 * MIB);
        ReceivedMessages tiny = new ReceivedMessages(new ByteBudget("messages being received", 8 * MIB));
        assertThat(tiny.share()).isEqualTo(8 * MIB);
    }

    /**
     * A token of this server's form naming {@code environment} (signed with a key of the test's own: the budget reads
     * the claim before authentication, which would refuse it).
     */
    private static String token(String environment, String id) {
        try {
            ECKey key = new ECKeyGenerator(Curve.P_256).generate();
            SignedJWT jwt = new SignedJWT(
                    new JWSHeader(JWSAlgorithm.ES256),
                    new JWTClaimsSet.Builder()
                            .claim("env", environment)
                            .jwtID(id)
                            .build());
            jwt.sign(new ECDSASigner(key));
            return jwt.serialize();
        } catch (JOSEException e) {
            throw new IllegalStateException(e);
        }
    }

    private ServerStreamTracer call(String credential) {
        Metadata headers = new Metadata();
        if (credential != null) {
            headers.put(AUTHORIZATION, credential);
        }
        return received.newServerStreamTracer("chalk.volume.v1.VolumeService/PutFile", headers);
    }

    /**
     * A replica's answer, over a real connection: the server was the client there, and counted nothing of what it
     * received, so a hostile replica could leave 33 MiB all but sent on each of a thousand calls. An answer past the
     * environment's share fails its call, and lets its bytes go; one within it arrives.
     */
    @Test
    void aReplicasAnswerCountsAgainstItsEnvironmentsShareOnTheWire() throws Exception {
        ByteBudget small = new ByteBudget("messages being received from replicas", 4 * MIB);
        ReceivedMessages fromReplicas = new ReceivedMessages(small);
        io.grpc.MethodDescriptor.Marshaller<byte[]> bytes = new io.grpc.MethodDescriptor.Marshaller<>() {
            @Override
            public java.io.InputStream stream(byte[] value) {
                return new java.io.ByteArrayInputStream(value);
            }

            @Override
            public byte[] parse(java.io.InputStream stream) {
                try {
                    return stream.readAllBytes();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        };
        io.grpc.MethodDescriptor<byte[], byte[]> answer = io.grpc.MethodDescriptor.<byte[], byte[]>newBuilder()
                .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
                .setFullMethodName("test.Replica/Answer")
                .setRequestMarshaller(bytes)
                .setResponseMarshaller(bytes)
                .build();
        io.grpc.Server replica = io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder.forAddress(
                        new java.net.InetSocketAddress("127.0.0.1", 0))
                .maxInboundMessageSize(64)
                .addService(io.grpc.ServerServiceDefinition.builder("test.Replica")
                        .addMethod(answer, io.grpc.stub.ServerCalls.asyncUnaryCall((request, out) -> {
                            out.onNext(new byte[request[0] * (int) MIB]);
                            out.onCompleted();
                        }))
                        .build())
                .build()
                .start();
        io.grpc.ManagedChannel channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forAddress(
                        "127.0.0.1", replica.getPort())
                .usePlaintext()
                .maxInboundMessageSize(33 << 20)
                .build();
        try {
            io.grpc.CallOptions traced =
                    io.grpc.CallOptions.DEFAULT.withStreamTracerFactory(fromReplicas.answersFromReplicasOf("dev"));
            assertThatThrownBy(
                            () -> io.grpc.stub.ClientCalls.blockingUnaryCall(channel, answer, traced, new byte[] {8}))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                        assertThat(e.getStatus().getDescription())
                                .contains("an answer of a function's replica", "at most 4194304 of them from one");
                    });
            assertThat(small.used()).isZero();
            assertThat(io.grpc.stub.ClientCalls.blockingUnaryCall(channel, answer, traced, new byte[] {3}))
                    .hasSize(3 * (int) MIB);
            assertThat(small.used()).isZero();
        } finally {
            channel.shutdownNow();
            replica.shutdownNow();
        }
    }

    /** A replica's answers and its own calls on the replicas' socket are its environment's, one share. */
    @Test
    void aReplicasAnswersShareItsEnvironmentsShareWithItsCalls() {
        ServerStreamTracer call = call("Bearer " + token("dev", "1"));
        call.inboundWireSize(41 * MIB);
        io.grpc.ClientStreamTracer answer = received.answersFromReplicasOf("dev")
                .newClientStreamTracer(
                        io.grpc.ClientStreamTracer.StreamInfo.newBuilder().build(), new Metadata());
        assertThatThrownBy(() -> answer.inboundWireSize(12 * MIB)).isInstanceOf(StatusRuntimeException.class);
        io.grpc.ClientStreamTracer other = received.answersFromReplicasOf("prod")
                .newClientStreamTracer(
                        io.grpc.ClientStreamTracer.StreamInfo.newBuilder().build(), new Metadata());
        other.inboundWireSize(12 * MIB);
        other.streamClosed(Status.OK);
        call.streamClosed(Status.OK);
        assertThat(budget.used()).isZero();
    }
}
