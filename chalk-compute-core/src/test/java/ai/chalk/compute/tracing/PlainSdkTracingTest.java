package ai.chalk.compute.tracing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.opentelemetry.proto.trace.v1.Span;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * A plain-Java client (no Spring) honours OpenTelemetry's {@code OTEL_*} variables: a client span per call exported
 * over OTLP to the endpoint they name, under their service name, and nothing when they turn export off.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PlainSdkTracingTest {

    @TempDir
    Path dataDir;

    @Test
    void aClientFromTheEnvironmentExportsASpanPerCallToTheOtlpEndpoint() throws Exception {
        try (OtlpHttpReceiverForTests collector = new OtlpHttpReceiverForTests();
                ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start()) {
            String general = collector.tracesEndpoint().replace("/v1/traces", "");
            try (SandboxClient client = SandboxClient.fromEnv(Map.of(
                    "CHALK_COMPUTE_TARGET",
                    "localhost:" + server.port().orElseThrow(),
                    "OTEL_EXPORTER_OTLP_ENDPOINT",
                    general,
                    "OTEL_EXPORTER_OTLP_PROTOCOL",
                    "http/protobuf",
                    "OTEL_SERVICE_NAME",
                    "pricing-batch"))) {
                Sandbox sandbox = client.create();
                assertThat(sandbox.exec("echo", "traced").stdoutText()).isEqualTo("traced\n");
                sandbox.terminate();
            } // closing the client exports what is left

            await().atMost(Duration.ofSeconds(10))
                    .until(() -> !collector.spans().isEmpty());
            assertThat(collector.errors()).isEmpty();
            assertThat(collector.spans())
                    .extracting(OtlpHttpReceiverForTests.ReceivedSpan::name)
                    .contains(
                            "chalk.sandbox.v1.SandboxService/CreateSandbox",
                            "chalk.sandbox.v1.SandboxService/Exec",
                            "chalk.sandbox.v1.SandboxService/TerminateSandbox");
            assertThat(collector.spans()).allSatisfy(span -> {
                assertThat(span.serviceName()).isEqualTo("pricing-batch");
                assertThat(span.kind()).isEqualTo(Span.SpanKind.SPAN_KIND_CLIENT);
            });
        }
    }

    @Test
    void theVariablesAreReadAsTheSpecificationSays() {
        OtelEnvironment both = OtelEnvironment.fromEnv(Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/",
                "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
                "OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%20ecret,tenant=a",
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "tenant=b",
                "OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci"));
        assertThat(both.tracesEndpoint()).contains("http://collector:4318/v1/traces");
        assertThat(both.headers()).containsExactlyInAnyOrderEntriesOf(Map.of("api-key", "s ecret", "tenant", "b"));
        assertThat(both.serviceName()).isEqualTo("unknown_service:java");
        assertThat(both.resourceAttributes()).containsEntry("deployment.environment", "ci");
        assertThat(both.toString()).as("header values stay out of logs").doesNotContain("ecret");

        OtelEnvironment grpc = OtelEnvironment.fromEnv(Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4317",
                "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"));
        assertThat(grpc.protocol()).isEqualTo(OtelEnvironment.Protocol.GRPC);
        assertThat(grpc.tracesEndpoint()).as("the signal's own variables win").contains("http://traces:4317");

        assertThat(OtelEnvironment.fromEnv(Map.of()).exports()).isFalse();
        assertThat(ClientTracing.fromEnv(Map.of())).isSameAs(ClientTracing.NONE);
        assertThat(ClientTracing.fromEnv(
                        Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317", "OTEL_SDK_DISABLED", "true")))
                .isSameAs(ClientTracing.NONE);
        assertThat(ClientTracing.fromEnv(
                        Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317", "OTEL_TRACES_EXPORTER", "none")))
                .isSameAs(ClientTracing.NONE);
    }

    @Test
    void aMalformedVariableIsRefusedNamingItBeforeAnyChannelOpens() {
        assertThatThrownBy(() -> SandboxClient.fromEnv(Map.of(
                        "CHALK_COMPUTE_TARGET", "localhost:1",
                        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318",
                        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                .hasMessageContaining("http/json");
        assertThatThrownBy(() -> OtelEnvironment.fromEnv(Map.of("OTEL_EXPORTER_OTLP_HEADERS", "novalue")))
                .hasMessageContaining("OTEL_EXPORTER_OTLP_HEADERS");
    }

    @Test
    void aCollectorThatIsDownIsOneWarningNotOnePerExport() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        Logger logger = (Logger) LoggerFactory.getLogger(OutageWarningExporter.class);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        Level previous = logger.getLevel();
        logger.setLevel(Level.DEBUG);
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .auth(Authentication.Mode.NONE)
                .build()
                .start()) {
            for (int i = 0; i < 3; i++) { // three clients: three exports at close, all failing
                SandboxClient client = SandboxClient.fromEnv(Map.of(
                        "CHALK_COMPUTE_TARGET", "localhost:" + server.port().orElseThrow(),
                        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:" + closedPort + "/v1/traces",
                        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"));
                assertThat(client.list()).isNotNull();
                long closing = System.nanoTime();
                client.close();
                if (i > 0) { // the first waits out the exporter's retries (about 9 s); the others know the outage
                    assertThat(Duration.ofNanos(System.nanoTime() - closing)).isLessThan(Duration.ofSeconds(5));
                }
            }
        } finally {
            logger.detachAppender(appender);
            logger.setLevel(previous);
        }
        assertThat(appender.list)
                .filteredOn(e -> e.getLevel() == Level.WARN)
                .hasSize(1)
                .first()
                .satisfies(e -> assertThat(e.getFormattedMessage()).contains("127.0.0.1:" + closedPort));
    }
}
