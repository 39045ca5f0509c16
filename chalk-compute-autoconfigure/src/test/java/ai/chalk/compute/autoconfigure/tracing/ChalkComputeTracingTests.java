package ai.chalk.compute.autoconfigure.tracing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.tracing.OtlpHttpReceiverForTests;
import ai.chalk.compute.tracing.OtlpHttpReceiverForTests.ReceivedSpan;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.opentelemetry.proto.trace.v1.Span.SpanKind;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * With {@code spring-boot-starter-opentelemetry}, sandbox lifecycle steps and gRPC calls become spans
 * exported over OTLP, and the embedded server's spans join the caller's trace. A real application
 * context (all auto-configuration, as a user's application has it) exports to a real OTLP/HTTP
 * receiver on loopback.
 */
class ChalkComputeTracingTests {

    private static final String CREATE = "chalk.sandbox.v1.SandboxService/CreateSandbox";
    private static final String EXEC = "chalk.sandbox.v1.SandboxService/Exec";

    @Test
    void clientAndEmbeddedServerSpansShareOneTraceWithParentLinks() throws Exception {
        try (OtlpHttpReceiverForTests receiver = new OtlpHttpReceiverForTests()) {
            try (ConfigurableApplicationContext context = new SpringApplicationBuilder(TracedApplication.class)
                    .web(WebApplicationType.NONE)
                    .properties(
                            "spring.application.name=traced-app",
                            "management.opentelemetry.tracing.export.otlp.endpoint=" + receiver.tracesEndpoint(),
                            "management.opentelemetry.tracing.export.schedule-delay=100ms",
                            "management.tracing.sampling.probability=1.0",
                            "management.otlp.metrics.export.enabled=false",
                            "management.logging.export.otlp.enabled=false",
                            "chalk.compute.tui=false")
                    .run()) {
                SandboxClient client = context.getBean(SandboxClient.class);
                ObservationRegistry registry = context.getBean(ObservationRegistry.class);
                Observation.createNotStarted("sandbox-tour", registry).observe(() -> {
                    Sandbox sandbox = client.create();
                    assertThat(sandbox.exec("echo", "traced").stdoutText()).isEqualTo("traced\n");
                    sandbox.terminate();
                });
            } // closing the context flushes the exporter

            await().atMost(Duration.ofSeconds(20))
                    .until(() -> receiver.spans().stream().anyMatch(named("sandbox-tour"))
                            && receiver.spans().stream().anyMatch(server(EXEC)));
            List<ReceivedSpan> spans = receiver.spans();
            assertThat(receiver.errors()).isEmpty();
            System.out.println(describe(spans));

            ReceivedSpan tour = single(spans, named("sandbox-tour"));
            ReceivedSpan create = single(spans, named("sandbox create"));
            ReceivedSpan createCall = single(spans, client(CREATE));
            ReceivedSpan createServed = single(spans, server(CREATE));
            ReceivedSpan exec = single(spans, named("sandbox exec"));
            ReceivedSpan execCall = single(spans, client(EXEC));
            ReceivedSpan execServed = single(spans, server(EXEC));
            ReceivedSpan terminate = single(spans, named("sandbox terminate"));

            List<ReceivedSpan> chain =
                    List.of(tour, create, createCall, createServed, exec, execCall, execServed, terminate);
            assertThat(chain)
                    .extracting(ReceivedSpan::traceId)
                    .as(describe(spans))
                    .containsOnly(tour.traceId());
            assertThat(tour.parentSpanId()).isEmpty();
            assertThat(create.parentSpanId()).isEqualTo(tour.spanId());
            assertThat(createCall.parentSpanId()).isEqualTo(create.spanId());
            assertThat(createServed.parentSpanId())
                    .as("the server's span is the client call's child")
                    .isEqualTo(createCall.spanId());
            assertThat(exec.parentSpanId()).isEqualTo(tour.spanId());
            assertThat(execCall.parentSpanId()).isEqualTo(exec.spanId());
            assertThat(execServed.parentSpanId()).isEqualTo(execCall.spanId());
            assertThat(terminate.parentSpanId()).isEqualTo(tour.spanId());
            assertThat(createCall.serviceName()).isEqualTo("traced-app");
        }
    }

    private static Predicate<ReceivedSpan> named(String name) {
        return span -> span.name().equals(name);
    }

    private static Predicate<ReceivedSpan> client(String method) {
        return span -> span.name().equals(method) && span.kind() == SpanKind.SPAN_KIND_CLIENT;
    }

    private static Predicate<ReceivedSpan> server(String method) {
        return span -> span.name().equals(method) && span.kind() == SpanKind.SPAN_KIND_SERVER;
    }

    private static ReceivedSpan single(List<ReceivedSpan> spans, Predicate<ReceivedSpan> which) {
        List<ReceivedSpan> found = spans.stream().filter(which).toList();
        assertThat(found).as(describe(spans)).hasSize(1);
        return found.get(0);
    }

    private static String describe(List<ReceivedSpan> spans) {
        Map<String, List<String>> byTrace = spans.stream()
                .collect(Collectors.groupingBy(
                        ReceivedSpan::traceId,
                        Collectors.mapping(
                                s -> s.name() + " " + s.kind() + " " + s.spanId() + "<-" + s.parentSpanId(),
                                Collectors.toList())));
        return "received spans by trace: " + byTrace;
    }

    /** An application with nothing but auto-configuration, as a user's would be. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class TracedApplication {}
}
