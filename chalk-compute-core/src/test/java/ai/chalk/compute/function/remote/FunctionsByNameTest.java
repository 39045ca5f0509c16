package ai.chalk.compute.function.remote;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.FunctionNotFoundException;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.deploy.CatalogField;
import ai.chalk.compute.function.deploy.CatalogFunction;
import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.deploy.CodeUploader;
import ai.chalk.compute.function.deploy.DeployedFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import com.acme.Tally;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Calling deployed functions knowing only their names, against a real server in process and over TCP: typed calls,
 * an interface proxy, attaching by version and function id through the client, and the catalog's listing.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class FunctionsByNameTest {

    /** What a caller declares of {@link Tally}, without depending on its code. */
    interface TallyApi {
        long sum(long a, long b);

        @FunctionName("label")
        String repeat(String name, String separator);

        @FunctionName("sum")
        CompletableFuture<Integer> sumLater(long a, long b);

        default String twice(String name) {
            return repeat(name, "+");
        }

        String notDeployed(String x);
    }

    @TempDir
    Path dataDir;

    @Test
    void inProcess() throws Exception {
        callByName(server -> SandboxClient.inProcess(server.inProcessName()));
    }

    @Test
    void overTcp() throws Exception {
        callByName(server -> SandboxClient.connect("localhost:" + server.port().orElseThrow()));
    }

    private void callByName(Function<ComputeServer, SandboxClient> connect) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SandboxClient client = connect.apply(server)) {
            List<DeployedFunction> deployed = client.functions().deploy(Tally.class);
            deployed.forEach(DeployedFunction::await);
            FunctionVersion sumVersion = deployed.get(2).await();

            // typed calls
            TypedFunction<Long> sum = RemoteFunction.fromName(client, "sum", Long.class);
            long total = sum.call(2L, 40L);
            assertThat(total).isEqualTo(42L);
            assertThat(sum.callBatch(List.of(new Object[] {1L, 2L}, new Object[] {3L, 4L})))
                    .containsExactly(3L, 7L);
            assertThat(sum.callAsync(1L, 1L).get(60, TimeUnit.SECONDS)).isEqualTo(2L);
            assertThat(RemoteFunction.fromName(client, "sum", int.class).call(2L, 40L))
                    .as("a number of another width when it fits")
                    .isEqualTo(42);
            assertThatThrownBy(() ->
                            RemoteFunction.fromName(client, "sum", String.class).call(1L, 1L))
                    .isInstanceOf(ClassCastException.class)
                    .hasMessage("sum returned java.lang.Long 2, which is not a java.lang.String");

            // a proxy
            TallyApi api = client.functions().proxy(TallyApi.class);
            assertThat(api.sum(20L, 22L)).isEqualTo(42L);
            assertThat(api.repeat("ab", "/")).isEqualTo("ab/ab");
            assertThat(api.twice("x")).isEqualTo("x+x");
            assertThat(api.sumLater(5L, 5L).get(60, TimeUnit.SECONDS)).isEqualTo(10);
            assertThatThrownBy(() -> api.notDeployed("x")).isInstanceOf(FunctionNotFoundException.class);
            assertThat(api).hasToString("FunctionProxy[" + TallyApi.class.getName() + "]");
            assertThatThrownBy(() -> client.functions().proxy(String.class))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("not an interface");

            // attached through the client by version and function id
            RemoteFunction byVersion = RemoteFunction.fromVersionId(client, sumVersion.id());
            assertThat(byVersion.versionId()).contains(sumVersion.id());
            assertThat(byVersion.call(1L, 2L)).isEqualTo(3L);
            RemoteFunction byFunction = RemoteFunction.fromFunctionId(client, sumVersion.functionId());
            assertThat(byFunction.versionId()).as("follows the current version").isEmpty();
            assertThat(byFunction.name()).isEqualTo("sum");
            assertThat(byFunction.call(3L, 4L)).isEqualTo(7L);
            FunctionDefinition sumDefinition = new FunctionRegistry()
                    .register(Tally.class).stream()
                            .filter(f -> f.name().equals("sum"))
                            .findFirst()
                            .orElseThrow();
            assertThat(RemoteFunction.fromName(client, "sum", sumDefinition).call(4L, 5L))
                    .isEqualTo(9L);
            assertThat(RemoteFunction.fromVersionId(client, sumVersion.id(), sumDefinition)
                            .call(1L, 1L))
                    .isEqualTo(2L);
            assertThat(RemoteFunction.fromFunctionId(client, sumVersion.functionId(), sumDefinition)
                            .call(2L, 2L))
                    .isEqualTo(4L);
            try (CodeSnapshot code = CodeSnapshot.ofClassPath(List.of(Tally.class))) {
                assertThat(CodeUploader.of(client).upload(code).uploaded())
                        .as("the deployment uploaded the same class path already")
                        .isEmpty();
            }
            assertThatThrownBy(() -> RemoteFunction.fromVersionId(client, "no-such-version"))
                    .isInstanceOf(FunctionNotFoundException.class);

            // the catalog
            List<CatalogFunction> catalog = client.functions().list();
            assertThat(catalog).extracting(CatalogFunction::name).containsExactly("explode", "label", "sum");
            CatalogFunction listedSum = catalog.get(2);
            assertThat(listedSum.currentVersion().id()).isEqualTo(sumVersion.id());
            assertThat(listedSum.description()).contains("Adds two numbers");
            assertThat(listedSum.parameters()).extracting(CatalogField::name).containsExactly("a", "b");
            assertThat(listedSum.parameters())
                    .extracting(CatalogField::javaType)
                    .containsOnly(Optional.of(Long.class));
            assertThat(listedSum.output().javaType()).contains(Long.class);
            assertThat(listedSum.generator()).isFalse();
            CatalogFunction label = catalog.get(1);
            assertThat(label.requiredParameters())
                    .extracting(CatalogField::name)
                    .containsExactly("name");
            assertThat(label.parameters().get(1).defaultJson()).contains("\"-\"");
            assertThat(label.signature())
                    .isEqualTo("(String name, String separator=\"-\", Integer copies=2) -> String");
            assertThat(catalog.get(0).description()).isEmpty();
        }
    }
}
