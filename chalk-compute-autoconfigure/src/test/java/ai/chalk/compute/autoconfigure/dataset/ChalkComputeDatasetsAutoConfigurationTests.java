package ai.chalk.compute.autoconfigure.dataset;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.TestServers;
import ai.chalk.compute.autoconfigure.auth.ChalkComputeAuthAutoConfiguration;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServer;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.autoconfigure.progress.ChalkComputeProgressAutoConfiguration;
import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.dataset.DatasetClient;
import ai.chalk.compute.dataset.DatasetStatus;
import ai.chalk.compute.sandbox.SandboxClient;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.grpc.client.autoconfigure.CompositeChannelFactoryAutoConfiguration;
import org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The {@link DatasetClient} bean: on the application's channel, embedded or remote, and replaceable. */
class ChalkComputeDatasetsAutoConfigurationTests {

    @TempDir
    Path tmp;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    EmbeddedComputeServerAutoConfiguration.class,
                    ChalkComputeAuthAutoConfiguration.class,
                    ChalkComputeProgressAutoConfiguration.class,
                    ChalkComputeDatasetsAutoConfiguration.class));

    @Test
    void theDatasetClientUploadsToTheEmbeddedServer() throws Exception {
        Path csv = Files.writeString(tmp.resolve("cities.csv"), "city,population\nLyon,522000\nNantes,320000\n");
        runner.withPropertyValues("chalk.compute.embedded.data-dir=" + tmp.resolve("data"))
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(DatasetClient.class);
                    Dataset cities = context.getBean(DatasetClient.class).upload("cities", csv);
                    assertThat(cities.status()).isEqualTo(DatasetStatus.COMPLETED);
                    assertThat(cities.rows()).isEqualTo(2);
                    // the same server as the sandbox client's
                    assertThat(context.getBean(SandboxClient.class)
                                    .datasets()
                                    .get("cities")
                                    .revisionId())
                            .isEqualTo(cities.revisionId());
                });
    }

    @Test
    void theDatasetClientCallsARemoteServerThroughTheApplicationsChannel() throws Exception {
        Path csv = Files.writeString(tmp.resolve("one.csv"), "n\n1\n");
        try (TestServers.RecordingServer remote = new TestServers.RecordingServer(tmp.resolve("remote"), null, null)) {
            // Spring gRPC's channel settings reach the dataset calls: they share the application's channel
            runner.withConfiguration(AutoConfigurations.of(
                            GrpcClientAutoConfiguration.class,
                            CompositeChannelFactoryAutoConfiguration.class,
                            SslAutoConfiguration.class))
                    .withPropertyValues(
                            "chalk.compute.target=127.0.0.1:" + remote.port(),
                            "spring.grpc.client.default-channel.user-agent=datasets-agent")
                    .run(context -> {
                        assertThat(context).hasNotFailed().doesNotHaveBean(EmbeddedComputeServer.class);
                        context.getBean(DatasetClient.class).upload("remote-one", csv);
                        assertThat(remote.calls()).isEqualTo(2); // GetDatasetUploadUris, FinalizeDatasetUpload
                        assertThat(remote.header("user-agent"))
                                .allSatisfy(agent -> assertThat(agent).startsWith("datasets-agent"));
                    });
        }
    }

    @Test
    void anApplicationsOwnDatasetClientIsKept() {
        runner.withUserConfiguration(OwnClient.class).run(context -> {
            assertThat(context).hasSingleBean(DatasetClient.class);
            assertThat(context.getBean(DatasetClient.class)).isSameAs(OwnClient.CLIENT);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnClient {
        static final DatasetClient CLIENT = DatasetClient.of(
                io.grpc.inprocess.InProcessChannelBuilder.forName("nowhere").build());

        @Bean
        DatasetClient myDatasets() {
            return CLIENT;
        }
    }
}
