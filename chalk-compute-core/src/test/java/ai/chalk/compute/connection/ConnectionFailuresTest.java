package ai.chalk.compute.connection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.ServerUnavailableException;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Real clients pointed at addresses where no server listens: every failure says where and why. */
class ConnectionFailuresTest {

    @TempDir
    Path dir;

    @Test
    void aClosedPortIsAConnectionRefusedToTheTargetInTheSdksException() throws IOException {
        int port = closedPort();
        try (SandboxClient client = SandboxClient.connect("localhost:" + port)) {
            assertThatThrownBy(client::list)
                    .isInstanceOf(ServerUnavailableException.class)
                    .hasMessage("UNAVAILABLE: connection refused to localhost:" + port)
                    .satisfies(e -> assertThat(((ServerUnavailableException) e).serverMessage())
                            .isEqualTo("connection refused to localhost:" + port));
            // the function client and the deployer share the client's channel, and its wording
            assertThatThrownBy(() -> RemoteFunction.fromName(client, "score"))
                    .isInstanceOf(ServerUnavailableException.class)
                    .hasMessage("UNAVAILABLE: connection refused to localhost:" + port);
        }
    }

    @Test
    void aChannelTheUserMadeNamesItsAuthority() throws IOException {
        int port = closedPort();
        ManagedChannel own = Grpc.newChannelBuilder("127.0.0.1:" + port, InsecureChannelCredentials.create())
                .build();
        try (SandboxClient client = SandboxClient.forChannel(own)) {
            assertThatThrownBy(client::list)
                    .isInstanceOf(ServerUnavailableException.class)
                    .hasMessage("UNAVAILABLE: connection refused to 127.0.0.1:" + port);
        } finally {
            own.shutdownNow();
        }
    }

    @Test
    void aMissingSocketFileAndAnUnknownHostAreSaidSo() {
        String socket = "unix://" + dir.resolve("nobody-listens.sock");
        try (SandboxClient client = SandboxClient.connect(socket)) {
            assertThatThrownBy(client::list)
                    .isInstanceOf(ServerUnavailableException.class)
                    .hasMessage("UNAVAILABLE: no socket file at " + socket);
        }
        try (SandboxClient client = SandboxClient.connect("no-such-host.invalid:50051")) {
            assertThatThrownBy(client::list)
                    .isInstanceOf(ServerUnavailableException.class)
                    .hasMessageStartingWith("UNAVAILABLE: unknown host in no-such-host.invalid:50051");
        }
    }

    @Test
    void aConnectionThatNeverCameWithinTheDeadlineIsSaidSo() {
        Status waiting = Status.DEADLINE_EXCEEDED.withDescription(
                "deadline exceeded after 2.9s. [closed=[], open=[[buffered_nanos=2900, waiting_for_connection]]]");
        assertThat(ConnectionFailures.describe(waiting, "compute:50051").getDescription())
                .startsWith("no connection to compute:50051 before the deadline (deadline exceeded after 2.9s.");
        Status slowServer = Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded after 2.9s. [remote_addr=x]");
        assertThat(ConnectionFailures.describe(slowServer, "compute:50051")).isSameAs(slowServer);
    }

    @Test
    void theServersOwnStatusKeepsItsWordsWithTheTargetAddedAndOthersAreUntouched() {
        assertThat(ConnectionFailures.describe(
                                Status.UNAVAILABLE.withDescription("the server is shutting down"), "compute:50051")
                        .getDescription())
                .isEqualTo("the server is shutting down (at compute:50051)");
        Status notFound = Status.NOT_FOUND.withDescription("sandbox abc not found");
        assertThat(ConnectionFailures.describe(notFound, "compute:50051")).isSameAs(notFound);
        // applied twice (the SDK's channel inside an application's), it words the message once
        Status once = ConnectionFailures.describe(
                Status.UNAVAILABLE
                        .withDescription("io exception")
                        .withCause(new java.net.ConnectException("Connection refused")),
                "compute:50051");
        assertThat(ConnectionFailures.describe(once, "compute:50051")).isSameAs(once);
        assertThat(once.getDescription()).isEqualTo("connection refused to compute:50051");
    }

    @Test
    void aFailureReportedByAnotherCallKeepsItsOwnTarget() {
        // a token fetched from another server failed: that failure named its own server and is not reworded
        Status token = Status.UNAVAILABLE
                .withDescription("connection refused to api.example:443")
                .withCause(new ServerUnavailableException(
                        "connection refused to api.example:443",
                        Status.UNAVAILABLE
                                .withCause(new java.net.ConnectException("Connection refused"))
                                .asRuntimeException()));
        assertThat(ConnectionFailures.describe(token, "compute:50051").getDescription())
                .isEqualTo("connection refused to api.example:443 (at compute:50051)");
    }

    private static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort(); // closed when this returns: nothing listens there
        }
    }
}
