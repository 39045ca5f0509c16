package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.proto.common.v1.LogEntry;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.function.v1.FunctionLogServiceGrpc;
import ai.chalk.compute.proto.function.v1.GetFunctionLogsRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.OutputLines;
import ai.chalk.compute.server.worker.FunctionLogs;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * What a function's replicas write goes to the server's log, named after the function and the replica, and comes
 * back through {@code FunctionLogService}: a line a call wrote (tagged by the worker) as that function's only, a
 * line written outside calls as every function the replica serves.
 */
class FunctionLogsTest {

    @TempDir
    Path dir;

    private static CreateExternalFunctionVersionRequest request(String name, TestCode code) {
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName(name)
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                        .setScalingSpec(ScalingSpec.newBuilder().setMaxReplicas(1)))
                .setConfig(FunctionConfig.newBuilder()
                        .putOptions("chalk_compute.code", code.manifestDigest)
                        .putOptions("chalk_compute.functions", "print=t.W#print,echo=t.W#echo"))
                .build();
    }

    private static List<LogEntry> logs(ManagedChannel channel, String function, int limit) {
        return FunctionLogServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .getFunctionLogs(GetFunctionLogsRequest.newBuilder()
                        .setFunctionName(function)
                        .setLimit(limit)
                        .build())
                .getLogsList();
    }

    /** Starts {@code appender} on the server's log of worker output, which it returns (to detach it after). */
    private static Logger listening(ListAppender<ILoggingEvent> appender) {
        Logger workerOutput = (Logger) LoggerFactory.getLogger("ai.chalk.compute.server.worker.WorkerOutput");
        appender.start();
        workerOutput.addAppender(appender);
        return workerOutput;
    }

    private static List<String> messages(List<LogEntry> entries) {
        return entries.stream().map(LogEntry::getMessage).toList();
    }

    @Test
    void aFunctionsOutputIsInTheServersLogAndComesBackByName() throws Exception {
        ListAppender<ILoggingEvent> serverLog = new ListAppender<>();
        Logger workerOutput = listening(serverLog);
        TestCode code = new TestCode("logs");
        try (RunningServer s = RunningServer.start(dir, b -> b.workerReadyTimeout(Duration.ofSeconds(30)))) {
            code.upload(s.channel);
            var catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(s.channel)
                    .withDeadlineAfter(90, TimeUnit.SECONDS);
            catalog.createExternalFunctionVersion(request("print", code));
            catalog.createExternalFunctionVersion(request("echo", code)); // the same replicas serve both
            catalog.callExternalFunction(CallExternalFunctionRequest.newBuilder()
                    .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName("print"))
                    .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                            .setName("print")
                            .setFeatherStream(ByteString.copyFromUtf8("p1")))
                    .build());

            await().atMost(Duration.ofSeconds(10))
                    .until(() ->
                            messages(logs(s.channel, "print", 100)).containsAll(List.of("printed p1", "untagged p1")));
            List<LogEntry> print = logs(s.channel, "print", 100);
            LogEntry printed = print.stream()
                    .filter(e -> e.getMessage().equals("printed p1"))
                    .findFirst()
                    .orElseThrow();
            String replica = printed.getLabelsOrThrow("replica");
            assertThat(replica).startsWith("fnw-");
            assertThat(printed.getLabelsMap())
                    .containsEntry("function", "print")
                    .containsEntry("stream", "stdout");
            LogEntry untagged = print.stream()
                    .filter(e -> e.getMessage().equals("untagged p1"))
                    .findFirst()
                    .orElseThrow();
            assertThat(untagged.getLabelsMap())
                    .containsEntry("stream", "stderr")
                    .containsEntry("replica", replica)
                    .doesNotContainKey("function");
            // the worker's own start is there too, its stdout's first line, with ids increasing (stdout and stderr are
            // separate pipes, so a line the JVM wrote to stderr just after it may have been read first)
            assertThat(print.stream()
                            .filter(e -> "stdout".equals(e.getLabelsOrDefault("stream", "")))
                            .findFirst()
                            .orElseThrow()
                            .getMessage())
                    .startsWith("test worker " + replica);
            assertThat(print).extracting(e -> Long.parseLong(e.getId())).isSorted();

            // the other function of the replica has what was written outside calls, not the call's own line
            assertThat(messages(logs(s.channel, "echo", 100)))
                    .contains("untagged p1")
                    .doesNotContain("printed p1");
            // a limit keeps the newest lines; stdout and stderr are separate pipes, so which of the call's two
            // lines the server read last is not fixed
            List<String> newest = messages(logs(s.channel, "print", 1));
            List<String> all = messages(logs(s.channel, "print", 100));
            assertThat(newest).containsExactly(all.get(all.size() - 1));

            // in the server's log, named after the function (or the functions served) and the replica
            assertThat(serverLog.list)
                    .extracting(ILoggingEvent::getFormattedMessage)
                    .contains("[print " + replica + "] printed p1", "[print,echo " + replica + "] untagged p1");

            assertThatThrownBy(() -> logs(s.channel, "print", FunctionLogs.LINES_PER_FUNCTION + 1))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                        assertThat(e.getStatus().getDescription()).contains("limit must be between 1 and 1000");
                    });
            assertThatThrownBy(() -> logs(s.channel, "nosuch", 10))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
            // another environment's caller does not see the function at all
            ManagedChannel other = RunningServer.authenticated(s.server, "other");
            try {
                assertThatThrownBy(() -> logs(other, "print", 10))
                        .isInstanceOfSatisfying(
                                StatusRuntimeException.class,
                                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
            } finally {
                other.shutdownNow();
            }
        } finally {
            workerOutput.detachAppender(serverLog);
        }
    }

    /**
     * A function writing 512 MB without a line break, then 1,000 lines at once: the server holds a line's bound of it,
     * not the 512 MB (its reader kept a line until its end, so a function could fill the server's heap), and writes at
     * most 200 of an environment's replicas' lines a second to its own log, then says how many it left out; the function's logs still
     * keep its last lines.
     */
    @Test
    void aFunctionFloodingItsOutputHoldsNeitherTheServersHeapNorItsLog() throws Exception {
        ListAppender<ILoggingEvent> serverLog = new ListAppender<>();
        Logger workerOutput = listening(serverLog);
        TestCode code = new TestCode("flood");
        List<java.lang.management.MemoryPoolMXBean> heap =
                java.lang.management.ManagementFactory.getMemoryPoolMXBeans().stream()
                        .filter(pool -> pool.getType() == java.lang.management.MemoryType.HEAP)
                        .toList();
        try (RunningServer s = RunningServer.start(dir, b -> b.workerReadyTimeout(Duration.ofSeconds(30)))) {
            code.upload(s.channel);
            var catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(s.channel)
                    .withDeadlineAfter(90, TimeUnit.SECONDS);
            catalog.createExternalFunctionVersion(CreateExternalFunctionVersionRequest.newBuilder()
                    .setFunctionName("flood")
                    .setSpec(ScalingGroupSpec.newBuilder()
                            .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                            .setScalingSpec(ScalingSpec.newBuilder().setMaxReplicas(1)))
                    .setConfig(FunctionConfig.newBuilder()
                            .putOptions("chalk_compute.code", code.manifestDigest)
                            .putOptions("chalk_compute.functions", "flood=t.W#flood"))
                    .build());
            CallExternalFunctionRequest flood = CallExternalFunctionRequest.newBuilder()
                    .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName("flood"))
                    .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                            .setName("flood")
                            .setFeatherStream(ByteString.copyFromUtf8("2")))
                    .build();
            catalog.callExternalFunction(flood); // the replica starts, and the paths are warm
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> messages(logs(s.channel, "flood", 1)).contains("line 999"));
            System.gc();
            long before = heap.stream().mapToLong(p -> p.getUsage().getUsed()).sum();
            heap.forEach(java.lang.management.MemoryPoolMXBean::resetPeakUsage);
            catalog.callExternalFunction(flood.toBuilder()
                    .setRemoteCallRequest(
                            flood.getRemoteCallRequest().toBuilder().setFeatherStream(ByteString.copyFromUtf8("512")))
                    .build());
            Thread.sleep(1100); // a new second of the server log's share
            catalog.callExternalFunction(flood);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> serverLog.list.stream()
                            .anyMatch(e -> e.getFormattedMessage().contains("not written to this log")));
            long peak = heap.stream().mapToLong(p -> p.getPeakUsage().getUsed()).sum();
            assertThat(peak - before).as("heap grown by reading the output").isLessThan(256L << 20);

            List<String> logged = serverLog.list.stream()
                    .map(ILoggingEvent::getFormattedMessage)
                    .filter(m -> m.startsWith("[flood "))
                    .toList();
            assertThat(logged)
                    .anyMatch(
                            m -> m.matches(
                                    "\\[flood fnw-\\S+\\] \\d+ lines of environment \\S+'s functions not written to this log.*"));
            assertThat(logged.size()).as("lines in the server's log").isLessThan(3 * 1000);
            assertThat(messages(logs(s.channel, "flood", FunctionLogs.LINES_PER_FUNCTION)))
                    .contains("line 999")
                    .allMatch(m -> m.length() <= FunctionLogs.MAX_LINE_CHARS + 3 + OutputLines.CUT.length());
        } finally {
            workerOutput.detachAppender(serverLog);
        }
    }

    @Test
    void anEnvironmentKeepsABoundedNumberOfCharactersWhateverTheNumberOfItsFunctions() {
        // a deployment names as many functions as it likes and tags its lines with any of them: 3,000 names with
        // long lines are 12 million characters, past what one environment keeps
        FunctionLogs logs = new FunctionLogs();
        List<String> names =
                java.util.stream.IntStream.range(0, 3000).mapToObj(i -> "f" + i).toList();
        String text = "x".repeat(FunctionLogs.MAX_LINE_CHARS);
        logs.add("other", List.of("f0"), "fnw-2", "stdout", FunctionLogs.Tagged.of("[chalk-function f0] kept"));
        for (String name : names) {
            logs.add("env", names, "fnw-1", "stdout", FunctionLogs.Tagged.of("[chalk-function " + name + "] " + text));
        }
        long kept = 0;
        for (String name : names) {
            for (FunctionLogs.Line line : logs.recent("env", name, 10, java.util.Optional.empty())) {
                kept += line.text().length();
            }
        }
        assertThat(kept)
                .isLessThanOrEqualTo(FunctionLogs.CHARS_PER_ENVIRONMENT)
                .isGreaterThan(FunctionLogs.CHARS_PER_ENVIRONMENT / 2);
        assertThat(logs.recent("env", "f0", 10, java.util.Optional.empty()))
                .as("the oldest")
                .isEmpty();
        assertThat(logs.recent("env", "f2999", 10, java.util.Optional.empty()))
                .as("the newest")
                .hasSize(1);
        // another environment's lines are its own to lose
        assertThat(logs.recent("other", "f0", 10, java.util.Optional.empty()))
                .extracting(FunctionLogs.Line::text)
                .containsExactly("kept");
    }

    @Test
    void keepsABoundedNumberOfLinesPerFunction() {
        FunctionLogs logs = new FunctionLogs();
        for (int i = 0; i < FunctionLogs.LINES_PER_FUNCTION + 50; i++) {
            logs.add("env", List.of("f", "g"), "fnw-1", "stdout", FunctionLogs.Tagged.of("[chalk-function f] " + i));
        }
        logs.add("env", List.of("f", "g"), "fnw-1", "stdout", FunctionLogs.Tagged.of("x".repeat(10_000)));
        List<FunctionLogs.Line> kept =
                logs.recent("env", "f", FunctionLogs.LINES_PER_FUNCTION, java.util.Optional.empty());
        assertThat(kept).hasSize(FunctionLogs.LINES_PER_FUNCTION);
        assertThat(kept.get(0).text()).isEqualTo("51");
        assertThat(kept.get(kept.size() - 1).text()).hasSize(FunctionLogs.MAX_LINE_CHARS + 3);
        // g got only the untagged line; another environment's f nothing
        assertThat(logs.recent("env", "g", 10, java.util.Optional.empty())).hasSize(1);
        assertThat(logs.recent("other", "f", 10, java.util.Optional.empty())).isEmpty();
    }
}
