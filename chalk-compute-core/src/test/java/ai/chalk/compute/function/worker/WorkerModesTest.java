package ai.chalk.compute.function.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.function.FunctionRegistry;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class WorkerModesTest {

    @Test
    void settingsComeFromTheEnvironment() {
        WorkerSettings settings = WorkerSettings.fromEnv(Map.of(
                "CHALK_WORKER_SOCKET",
                "/chalk/run/worker.sock",
                "CHALK_WORKER_FUNCTIONS",
                "add=com.acme.Orders#add, Embedder.embed=com.acme.Embedder#embed",
                "CHALK_WORKER_ID",
                "w-3"));

        assertThat(settings.socket()).isEqualTo(Path.of("/chalk/run/worker.sock"));
        assertThat(settings.functions())
                .containsExactly(
                        new FunctionBinding("add", "com.acme.Orders", "add"),
                        new FunctionBinding("Embedder.embed", "com.acme.Embedder", "embed"));
        assertThat(settings.mode()).isEqualTo("plain");
        assertThat(settings.workerId()).isEqualTo("w-3");
        assertThat(settings.functions().get(1)).hasToString("Embedder.embed=com.acme.Embedder#embed");
    }

    @Test
    void missingOrMalformedSettingsAreNamed() {
        assertThatThrownBy(() -> WorkerSettings.fromEnv(Map.of("CHALK_WORKER_FUNCTIONS", "a=b.C#d")))
                .hasMessageContaining("CHALK_WORKER_SOCKET is not set");
        assertThatThrownBy(() -> WorkerSettings.fromEnv(Map.of("CHALK_WORKER_SOCKET", "/s")))
                .hasMessageContaining("CHALK_WORKER_FUNCTIONS: no functions given");
        assertThatThrownBy(() -> WorkerSettings.fromEnv(
                        Map.of("CHALK_WORKER_SOCKET", "/s", "CHALK_WORKER_FUNCTIONS", "add=Orders")))
                .hasMessageContaining("'add=Orders' is not name=fully.qualified.Class#method");
    }

    @Test
    void modesOtherThanPlainComeFromServiceLoaderImplementations() throws Exception {
        assertThat(FunctionWorker.loaderFor("plain", null)).isInstanceOf(PlainWorkerFunctions.class);
        WorkerFunctions custom = FunctionWorker.loaderFor("test:orders", null);
        assertThat(custom).isInstanceOf(EchoWorkerFunctions.class);
        FunctionRegistry registry = custom.load(WorkerSettings.fromEnv(Map.of(
                "CHALK_WORKER_SOCKET",
                "/s",
                "CHALK_WORKER_FUNCTIONS",
                "greet=com.acme.Orders#greet",
                "CHALK_WORKER",
                "test:orders")));
        assertThat(registry.get("greet").invoke("Ada")).isEqualTo("Bonjour, Ada");

        assertThatThrownBy(() -> FunctionWorker.loaderFor("spring:com.acme.App", null))
                .hasMessageContaining("needs the Chalk Compute Spring Boot starter");
        assertThatThrownBy(() -> FunctionWorker.loaderFor("docker", null))
                .hasMessageContaining("CHALK_WORKER=docker is not a worker mode");
    }
}
