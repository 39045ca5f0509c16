package ai.chalk.compute.autoconfigure.auth;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.auth.AccessToken;
import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.auth.CredentialSource;
import ai.chalk.compute.auth.TokenSource;
import ai.chalk.compute.autoconfigure.ChalkComputeAutoConfiguration;
import ai.chalk.compute.autoconfigure.TestEnvironment;
import ai.chalk.compute.autoconfigure.TestServers;
import ai.chalk.compute.autoconfigure.embedded.EmbeddedComputeServerAutoConfiguration;
import ai.chalk.compute.sandbox.SandboxClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Credentials for a remote target with the SDK's precedence (application properties, then environment
 * variables, then {@code ~/.chalk.yml}), the environment and home directory given through property
 * sources, never by changing this process's environment.
 */
class ChalkComputeAuthAutoConfigurationTests {

    @TempDir
    Path tmp;

    private Path home;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    ChalkComputeAutoConfiguration.class,
                    EmbeddedComputeServerAutoConfiguration.class,
                    ChalkComputeAuthAutoConfiguration.class));

    @BeforeEach
    void emptyHome() throws Exception {
        home = Files.createDirectories(tmp.resolve("home"));
    }

    private ApplicationContextRunner remote(Map<String, Object> env) {
        return runner.withInitializer(TestEnvironment.of(env, home))
                .withPropertyValues("chalk.compute.target=127.0.0.1:1");
    }

    private void writeChalkYml() throws Exception {
        writeChalkYml("https://yml.chalk.example");
    }

    private void writeChalkYml(String apiServer) throws Exception {
        Files.writeString(home.resolve(".chalk.yml"), """
                tokens:
                  default:
                    name: default
                    clientId: yml-id
                    clientSecret: yml-secret
                    apiServer: %s
                    activeEnvironment: yml-env
                """.formatted(apiServer));
    }

    @Test
    void environmentVariablesAreUsedWhenNothingElseIsSet() {
        remote(Map.of(
                        "CHALK_CLIENT_ID",
                        "env-id",
                        "CHALK_CLIENT_SECRET",
                        "env-secret",
                        "CHALK_API_SERVER",
                        "https://env.chalk.example",
                        "CHALK_ENVIRONMENT",
                        "env-env"))
                .run(context -> {
                    ChalkCredentials credentials = context.getBean(ChalkCredentials.class);
                    assertThat(credentials.source()).isEqualTo(CredentialSource.ENVIRONMENT);
                    assertThat(credentials.clientId()).contains("env-id");
                    assertThat(credentials.clientSecret()).contains("env-secret");
                    assertThat(credentials.apiServer()).contains("https://env.chalk.example");
                    assertThat(credentials.environment()).contains("env-env");
                    assertThat(context).hasSingleBean(ChalkComputeAuthInterceptor.class);
                });
    }

    @Test
    void applicationPropertiesWinOverEnvironmentVariables() {
        remote(Map.of(
                        "CHALK_CLIENT_ID",
                        "env-id",
                        "CHALK_CLIENT_SECRET",
                        "env-secret",
                        "CHALK_API_SERVER",
                        "https://env.chalk.example",
                        "CHALK_ENVIRONMENT",
                        "env-env"))
                .withPropertyValues(
                        "chalk.compute.client-id=app-id",
                        "chalk.compute.client-secret=app-secret",
                        "chalk.compute.api-server=https://app.chalk.example",
                        "chalk.compute.environment=app-env")
                .run(context -> {
                    ChalkCredentials credentials = context.getBean(ChalkCredentials.class);
                    assertThat(credentials.source()).isEqualTo(CredentialSource.EXPLICIT);
                    assertThat(credentials.clientId()).contains("app-id");
                    assertThat(credentials.clientSecret()).contains("app-secret");
                    assertThat(credentials.apiServer()).contains("https://app.chalk.example");
                    assertThat(credentials.environment()).contains("app-env");
                });
    }

    @Test
    void chalkYmlIsUsedWhenNeitherPropertiesNorEnvironmentNameAnIdentity() throws Exception {
        writeChalkYml();
        remote(Map.of()).run(context -> {
            ChalkCredentials credentials = context.getBean(ChalkCredentials.class);
            assertThat(credentials.source()).isEqualTo(CredentialSource.CHALK_YML);
            assertThat(credentials.clientId()).contains("yml-id");
            assertThat(credentials.apiServer()).contains("https://yml.chalk.example");
            assertThat(credentials.environment()).contains("yml-env");
        });
    }

    @Test
    void environmentVariablesWinOverChalkYml() throws Exception {
        writeChalkYml();
        remote(Map.of("CHALK_CLIENT_ID", "env-id", "CHALK_CLIENT_SECRET", "env-secret"))
                .run(context -> {
                    ChalkCredentials credentials = context.getBean(ChalkCredentials.class);
                    assertThat(credentials.source()).isEqualTo(CredentialSource.ENVIRONMENT);
                    assertThat(credentials.clientId()).contains("env-id");
                });
    }

    @Test
    void applicationPropertiesWinOverChalkYml() throws Exception {
        writeChalkYml();
        remote(Map.of())
                .withPropertyValues(
                        "chalk.compute.client-id=app-id",
                        "chalk.compute.client-secret=app-secret",
                        "chalk.compute.environment=app-env")
                .run(context -> {
                    ChalkCredentials credentials = context.getBean(ChalkCredentials.class);
                    assertThat(credentials.source()).isEqualTo(CredentialSource.EXPLICIT);
                    assertThat(credentials.clientId()).contains("app-id");
                    assertThat(credentials.environment()).contains("app-env");
                });
    }

    @Test
    void anIdentityTokenFileFromPropertiesWinsOverTheEnvironmentVariable() throws Exception {
        Path file = Files.writeString(tmp.resolve("token"), "x");
        remote(Map.of("CHALK_WEB_IDENTITY_TOKEN_FILE", "/var/run/secrets/chalk/identity-token"))
                .withPropertyValues("chalk.compute.identity-token-file=" + file)
                .run(context -> assertThat(
                                context.getBean(ChalkCredentials.class).tokenFile())
                        .contains(file));
    }

    @Test
    void withoutAnyIdentityCallsGoWithoutAToken() {
        remote(Map.of()).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(ChalkCredentials.class).hasIdentity()).isFalse();
            assertThat(context.getBeanProvider(ChalkComputeAuthInterceptor.class)
                            .getIfAvailable())
                    .isNull();
        });
    }

    @Test
    void theEmbeddedServerNeedsNoTokenSoNoCredentialsAreResolved() throws Exception {
        writeChalkYml();
        runner.withInitializer(
                        TestEnvironment.of(Map.of("CHALK_CLIENT_ID", "env-id", "CHALK_CLIENT_SECRET", "s"), home))
                .run(context -> {
                    assertThat(context)
                            .hasNotFailed()
                            .doesNotHaveBean(ChalkCredentials.class)
                            .doesNotHaveBean(ChalkComputeAuthInterceptor.class);
                    assertThat(context.getBean(SandboxClient.class).list()).isEmpty();
                });
    }

    @Test
    void clientCredentialsAreExchangedForATokenSentWithEverySandboxCall() throws Exception {
        try (TokenServer tokens = new TokenServer("env-id", "env-secret");
                TestServers.RecordingServer compute =
                        new TestServers.RecordingServer(tmp.resolve("compute"), null, null)) {
            Map<String, Object> env = new HashMap<>();
            env.put("CHALK_CLIENT_ID", "env-id");
            env.put("CHALK_CLIENT_SECRET", "env-secret");
            env.put("CHALK_API_SERVER", tokens.url());
            runner.withInitializer(TestEnvironment.of(env, home))
                    .withPropertyValues("chalk.compute.target=127.0.0.1:" + compute.port())
                    .run(context -> {
                        SandboxClient client = context.getBean(SandboxClient.class);
                        client.list();
                        client.list();
                        assertThat(compute.header("authorization")).containsExactly("Bearer token-1", "Bearer token-1");
                        assertThat(tokens.exchanges()).isEqualTo(1);
                    });
        }
    }

    /**
     * A developer's {@code chalk login} is for the API server it names. The starter sent its token to whatever
     * {@code chalk.compute.target} named, and with no API server in the login, its client secret too, where the
     * SDK's {@code SandboxClient.fromEnv} sends neither: whoever ran the target got the developer's identity.
     */
    @Test
    void aChalkLoginGoesToNoTargetButTheApiServerItNames() throws Exception {
        try (TokenServer tokens = new TokenServer("yml-id", "yml-secret");
                TestServers.RecordingServer compute =
                        new TestServers.RecordingServer(tmp.resolve("compute"), null, null)) {
            writeChalkYml(tokens.url());
            runner.withInitializer(TestEnvironment.of(Map.of(), home))
                    .withPropertyValues("chalk.compute.target=127.0.0.1:" + compute.port())
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context.getBeanProvider(ChalkComputeAuthInterceptor.class)
                                        .getIfAvailable())
                                .isNull();
                        context.getBean(SandboxClient.class).list();
                        assertThat(compute.header("authorization"))
                                .as("the call was made, without a token")
                                .isNotEmpty()
                                .containsOnlyNulls();
                        assertThat(tokens.exchanges()).isZero();
                    });
            // the target that is the login's own API server gets its token
            runner.withInitializer(TestEnvironment.of(Map.of(), home))
                    .withPropertyValues("chalk.compute.target=" + tokens.url())
                    .run(context -> assertThat(context.getBeanProvider(ChalkComputeAuthInterceptor.class)
                                    .getIfAvailable())
                            .isNotNull());
        }
    }

    @Test
    void theUsersTokenSourceAndCredentialsWin() throws Exception {
        try (TestServers.RecordingServer compute =
                new TestServers.RecordingServer(tmp.resolve("compute"), null, null)) {
            runner.withInitializer(
                            TestEnvironment.of(Map.of("CHALK_CLIENT_ID", "env-id", "CHALK_CLIENT_SECRET", "s"), home))
                    .withUserConfiguration(UserAuth.class)
                    .withPropertyValues("chalk.compute.target=127.0.0.1:" + compute.port())
                    .run(context -> {
                        assertThat(context.getBean(ChalkCredentials.class)).isSameAs(UserAuth.CREDENTIALS);
                        context.getBean(SandboxClient.class).list();
                        assertThat(compute.header("authorization")).containsExactly("Bearer users-token");
                    });
        }
    }

    @Test
    void theUsersAuthInterceptorWins() {
        ChalkComputeAuthInterceptor mine = new ChalkComputeAuthInterceptor(
                () -> new AccessToken("mine", Optional.empty(), Optional.empty()), false);
        remote(Map.of("CHALK_CLIENT_ID", "env-id", "CHALK_CLIENT_SECRET", "s"))
                .withBean(ChalkComputeAuthInterceptor.class, () -> mine)
                .run(context -> assertThat(context.getBean(ChalkComputeAuthInterceptor.class))
                        .isSameAs(mine));
    }

    /** The application's own credentials and token source. */
    @Configuration(proxyBeanMethods = false)
    static class UserAuth {
        static final ChalkCredentials CREDENTIALS = ChalkCredentials.ofClientCredentials("mine", "my-secret");

        @Bean
        ChalkCredentials myCredentials() {
            return CREDENTIALS;
        }

        @Bean
        TokenSource myTokens() {
            return () -> new AccessToken("users-token", Optional.empty(), Optional.empty());
        }
    }
}
