package ai.chalk.compute.function.worker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.connection.ConnectionSettings;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * A connection over a unix socket, between a worker and a client the SDK opens (as a worker's own client of the
 * server does), sets no TCP option that such a socket lacks: Netty would warn about it on each side, for every
 * connection.
 */
class UnixSocketOptionsTest {

    @TempDir
    Path dir;

    @Test
    void neitherSideOfAUnixSocketConnectionWarnsAboutTcpOptions() throws Exception {
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        root.addAppender(logs);
        try {
            WorkerSettings settings = WorkerSettings.fromEnv(Map.of(
                    WorkerSettings.SOCKET,
                    dir.resolve("w.sock").toString(),
                    WorkerSettings.FUNCTIONS,
                    "nap=com.acme.Naps#nap"));
            try (FunctionWorker worker = FunctionWorker.start(settings)) {
                for (String target : new String[] {"unix://" + settings.socket(), "unix:" + settings.socket()}) {
                    ManagedChannel channel =
                            ConnectionSettings.forTarget(target).openChannel();
                    try {
                        assertThat(HealthGrpc.newBlockingStub(channel)
                                        .withDeadlineAfter(30, TimeUnit.SECONDS)
                                        .check(HealthCheckRequest.getDefaultInstance())
                                        .getStatus())
                                .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
                    } finally {
                        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                    }
                }
            }
        } finally {
            root.detachAppender(logs);
        }
        assertThat(logs.list)
                .extracting(ILoggingEvent::getFormattedMessage)
                .noneMatch(m -> m.contains("Unknown channel option"));
    }
}
