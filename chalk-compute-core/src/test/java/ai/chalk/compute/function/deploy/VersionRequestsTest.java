package ai.chalk.compute.function.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.arrow.SchemaProtos;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import com.acme.Embedder;
import com.acme.Orders;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class VersionRequestsTest {

    private final FunctionRegistry registry = new FunctionRegistry();

    @Test
    void theEnsureRequestCarriesSchemasSpecAndOptions() {
        registry.register(Orders.class);
        FunctionDefinition search = registry.get("search_orders").definition();

        CreateExternalFunctionVersionRequest request = VersionRequests.build(
                search, List.of(search), "sha256:abc", WorkerMode.PLAIN, "eclipse-temurin:17-jre", Optional.empty());

        assertThat(request.getFunctionName()).isEqualTo("search_orders");
        assertThat(request.getInputArrowSchema()).isEqualTo(SchemaProtos.toProto(search.inputSchema()));
        assertThat(request.getOutputArrowSchema()).isEqualTo(SchemaProtos.toProto(search.outputSchema()));
        var container = request.getSpec().getContainerSpec();
        assertThat(container.getImage()).isEqualTo("eclipse-temurin:17-jre");
        assertThat(container.getEnvVarsMap()).isEqualTo(Map.of("MODE", "fast", "EMPTY", ""));
        assertThat(container.getResources().getCpu()).isEqualTo("2");
        assertThat(container.getResources().getMemory()).isEqualTo("4Gi");
        assertThat(container.getSecretRefsList())
                .singleElement()
                .satisfies(ref -> assertThat(ref.getSecretName()).isEqualTo("OPENAI_API_KEY"));
        var scaling = request.getSpec().getScalingSpec();
        assertThat(scaling.getMinReplicas()).isZero();
        assertThat(scaling.getMaxReplicas()).isEqualTo(3);
        assertThat(scaling.getShutdownDelaySeconds()).isEqualTo(60);
        var config = request.getConfig();
        assertThat(config.getOptionsMap())
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "chalk_compute.code", "sha256:abc",
                        "chalk_compute.functions", "search_orders=com.acme.Orders#search",
                        "chalk_compute.worker", "plain",
                        "chalk_compute.timeout", "PT5M"));
        assertThat(config.getRetryPolicy().getMaxRetries()).isEqualTo(2);
        assertThat(config.getConcurrency().getMaxConcurrent()).isEqualTo(8);
    }

    @Test
    void aFunctionWithoutOptionsLeavesThemUnsetAndForceAddsTheNonce() {
        registry.register(Orders.class);
        FunctionDefinition add = registry.get("add").definition();

        var request = VersionRequests.build(
                add, List.of(add), "sha256:abc", WorkerMode.spring(Orders.class), "", Optional.of("nonce-1"));

        assertThat(request.getSpec().getContainerSpec().getImage()).isEmpty();
        assertThat(request.getSpec().getContainerSpec().hasResources()).isFalse();
        assertThat(request.getSpec().getScalingSpec().getMaxReplicas()).isEqualTo(1);
        assertThat(request.getConfig().hasRetryPolicy()).isFalse();
        assertThat(request.getConfig().hasConcurrency()).isFalse();
        assertThat(request.getConfig().getOptionsMap())
                .containsEntry("chalk_compute.worker", "spring:com.acme.Orders")
                .containsEntry("chalk_compute.force", "nonce-1")
                .doesNotContainKey("chalk_compute.timeout");
    }

    @Test
    void aClassDeploymentListsEveryMethodItServes() {
        List<FunctionDefinition> methods = registry.register(Embedder.class);
        FunctionDefinition embed = registry.get("Embedder.embed").definition();

        var request = VersionRequests.build(embed, methods, "sha256:abc", WorkerMode.PLAIN, "", Optional.empty());

        assertThat(request.getConfig().getOptionsMap())
                .containsEntry(
                        "chalk_compute.functions",
                        "Embedder.calls=com.acme.Embedder#calls,Embedder.embed=com.acme.Embedder#embed,"
                                + "Embedder.similarity=com.acme.Embedder#similarity");
        assertThat(request.getSpec().getContainerSpec().getResources().getMemory())
                .isEqualTo("8Gi");
        assertThat(request.getSpec().getScalingSpec().getMinReplicas()).isEqualTo(1);
        assertThat(request.getConfig().getRetryPolicy().getMaxRetries()).isEqualTo(1);
    }

    @Test
    void workerModesAreChecked() {
        assertThat(WorkerMode.PLAIN.value()).isEqualTo("plain");
        assertThatThrownBy(() -> new WorkerMode("spring:")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new WorkerMode("docker")).hasMessageContaining("neither plain nor spring:");
    }
}
