package ai.chalk.compute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.autoconfigure.auth.ChalkComputeAuthAutoConfiguration;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.autoconfigure.progress.ChalkComputeProgressAutoConfiguration;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sql.SQLClient;
import ai.chalk.compute.sql.SqlResult;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The SQLClient bean: on the SandboxClient's channel, backing off for the application's own. */
class SqlClientAutoConfigurationTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    EmbeddedComputeServerAutoConfiguration.class,
                    ChalkComputeAuthAutoConfiguration.class,
                    ChalkComputeProgressAutoConfiguration.class));

    @Test
    void theSqlClientQueriesTheEmbeddedServerOnTheSandboxClientsChannel() {
        runner.run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(SQLClient.class);
            SqlResult result = context.getBean(SQLClient.class).query("SELECT 42 AS answer");
            assertThat(result.rows()).containsExactly(Map.of("answer", 42));
        });
    }

    @Test
    void anApplicationsOwnSqlClientIsKept() {
        runner.withUserConfiguration(OwnSqlClient.class).run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(SQLClient.class);
            assertThat(context.getBean(SQLClient.class)).isSameAs(OwnSqlClient.client);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnSqlClient {
        static SQLClient client;

        @Bean
        SQLClient mySqlClient(SandboxClient sandboxes) {
            client = SQLClient.forChannel(sandboxes.channel());
            return client;
        }
    }
}
