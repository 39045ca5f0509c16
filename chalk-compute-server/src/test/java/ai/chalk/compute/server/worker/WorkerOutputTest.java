package ai.chalk.compute.server.worker;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * What replicas' output costs the server's log: the replicas of one environment share
 * {@value ServerLogRate#LINES_PER_SECOND} lines a second. The rate was a replica's, so an environment wrote that many
 * for each replica it ran (a deployment of 50 replicas printing in a loop, 10,000 lines a second to the server's log and
 * the disk it is written to).
 */
class WorkerOutputTest {

    private static ByteArrayInputStream lines(String prefix, int count) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < count; i++) {
            out.append(prefix).append(' ').append(i).append('\n');
        }
        return new ByteArrayInputStream(out.toString().getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void theReplicasOfAnEnvironmentShareTheServerLogsLinesAndAnotherEnvironmentHasItsOwn() {
        Logger log = (Logger) LoggerFactory.getLogger(WorkerOutput.class);
        ListAppender<ILoggingEvent> serverLog = new ListAppender<>();
        serverLog.start();
        log.addAppender(serverLog);
        try {
            FunctionLogs logs = new FunctionLogs();
            for (String replica : List.of("fnw-a", "fnw-b", "fnw-c")) {
                new WorkerOutput(replica, "loud", List.of("print"), logs)
                        .follow(lines("loud " + replica, 150), "stdout", Runnable::run);
            }
            new WorkerOutput("fnw-d", "quiet", List.of("print"), logs)
                    .follow(lines("quiet", 150), "stdout", Runnable::run);

            List<String> written = serverLog.list.stream()
                    .map(ILoggingEvent::getFormattedMessage)
                    .toList();
            assertThat(written.stream().filter(m -> m.contains("] loud fnw-")))
                    .as("the loud environment's lines, from three replicas of 150 each")
                    .hasSize(ServerLogRate.LINES_PER_SECOND);
            assertThat(written.stream().filter(m -> m.contains("] quiet ")))
                    .as("another environment's lines")
                    .hasSize(150);
            assertThat(written)
                    .anyMatch(m -> m.contains("lines of environment loud's functions not written to this log"));
            assertThat(logs.recent("loud", "print", 1000, java.util.Optional.empty()))
                    .as("the function's own logs keep them all")
                    .hasSize(450);
        } finally {
            log.detachAppender(serverLog);
        }
    }
}
