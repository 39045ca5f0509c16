package ai.chalk.compute.sql;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.dataset.DatasetClient;
import ai.chalk.compute.function.FunctionRegistry;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Making the clients a Spring application gets as beans costs nothing it does not use: no HTTP client (whose
 * creation sets up the JDK's TLS context and starts a selector thread) before a file moves, and no Arrow mapping
 * before a function is read. These were most of what the starter added to a web application's startup thread.
 */
class ClientCreationCostTest {

    @Test
    void sqlAndDatasetClientsStartNoHttpClientUntilAFileMoves() {
        ManagedChannel channel =
                InProcessChannelBuilder.forName("nowhere-" + System.nanoTime()).build();
        try {
            List<String> before = httpThreads();
            SQLClient sql = SQLClient.forChannel(channel);
            DatasetClient datasets = DatasetClient.of(channel);
            assertThat(sql).isNotNull();
            assertThat(datasets).isNotNull();
            assertThat(httpThreads()).isEqualTo(before);
        } finally {
            channel.shutdownNow();
        }
    }

    @Test
    void aRegistryMakesItsArrowMappingWhenFirstAskedAndKeepsIt() {
        FunctionRegistry registry = new FunctionRegistry();
        assertThat(registry.definitions()).isEmpty();
        assertThat(registry.mapping()).isNotNull().isSameAs(registry.mapping());
    }

    /** The JDK's HTTP client names its selector thread {@code HttpClient-<n>-SelectorManager}. */
    private static List<String> httpThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .map(Thread::getName)
                .filter(name -> name.startsWith("HttpClient-"))
                .sorted()
                .toList();
    }
}
