package ai.chalk.compute.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import ai.chalk.compute.error.FailedPreconditionException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Precedence: explicit values, then environment variables, then {@code ~/.chalk.yml}, with a temporary home. */
class ChalkCredentialsTest {

    private static final String YML_SECRET = "yml-secret-value-0001";

    @TempDir
    Path tmp;

    private Path home;
    private Path project;
    private Path workingDirectory;

    @BeforeEach
    void layout() throws IOException {
        home = Files.createDirectories(tmp.resolve("home"));
        project = Files.createDirectories(tmp.resolve("work/fraud"));
        workingDirectory = Files.createDirectories(project.resolve("src/features"));
    }

    private void writeChalkYml(Path dir, String name) throws IOException {
        Files.writeString(dir.resolve(name), """
                tokens:
                  default:
                    name: default
                    clientId: client-default
                    clientSecret: default-secret-value
                    apiServer: https://default.chalk.example
                    activeEnvironment: env-default
                  %s:
                    name: work
                    clientId: client-work
                    clientSecret: work-secret-value
                    apiServer: https://work.chalk.example
                  %s:
                    name: fraud
                    clientId: client-fraud
                    clientSecret: %s
                    apiServer: https://fraud.chalk.example
                    activeEnvironment: env-fraud
                    validUntil: "2030-01-02 03:04:05.123456789 +0000 UTC"
                """.formatted(tmp.resolve("work"), project, YML_SECRET));
    }

    private ChalkCredentials.Builder resolver(Map<String, String> env) {
        return ChalkCredentials.builder()
                .environmentVariables(env)
                .homeDirectory(home)
                .workingDirectory(workingDirectory);
    }

    @Test
    void theChalkYmlLoginForTheNearestParentDirectoryIsUsed() throws IOException {
        writeChalkYml(home, ".chalk.yml");

        ChalkCredentials credentials = resolver(Map.of()).resolve();

        assertThat(credentials.source()).isEqualTo(CredentialSource.CHALK_YML);
        assertThat(credentials.clientId()).contains("client-fraud");
        assertThat(credentials.clientSecret()).contains(YML_SECRET);
        assertThat(credentials.apiServer()).contains("https://fraud.chalk.example");
        assertThat(credentials.environment()).contains("env-fraud");
        assertThat(credentials.validUntil()).contains(Instant.parse("2030-01-02T03:04:05.123456789Z"));
        assertThat(credentials.tokenFile()).isEmpty();
    }

    /** The file holds client secrets: one other users may read is still used, with a warning saying how to close it. */
    @Test
    void aChalkYmlOthersMayReadIsUsedWithAWarning() throws IOException {
        writeChalkYml(home, ".chalk.yml");
        Path file = home.resolve(".chalk.yml");
        try (LogCapture logs = new LogCapture()) {
            Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            resolver(Map.of()).resolve();
            assertThat(logs.lines()).noneMatch(l -> l.startsWith("WARN"));

            Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
            assertThat(resolver(Map.of()).resolve().clientId()).contains("client-fraud");
            assertThat(logs.lines())
                    .anyMatch(l -> l.startsWith("WARN") && l.contains("rw-r--r--") && l.contains("chmod 600 " + file));
            assertThat(logs.all()).doesNotContain(YML_SECRET);
        }
    }

    @Test
    void outsideAnyListedDirectoryTheDefaultLoginIsUsed() throws IOException {
        writeChalkYml(home, ".chalk.yml");

        ChalkCredentials credentials = resolver(Map.of())
                .workingDirectory(Files.createDirectories(tmp.resolve("elsewhere")))
                .resolve();

        assertThat(credentials.clientId()).contains("client-default");
        assertThat(credentials.environment()).contains("env-default");
    }

    @Test
    void xdgConfigHomeAndTheYamlSpellingAreHonoured() throws IOException {
        Path config = Files.createDirectories(tmp.resolve("config"));
        writeChalkYml(config, ".chalk.yaml");

        ChalkCredentials credentials =
                resolver(Map.of("XDG_CONFIG_HOME", config.toString())).resolve();

        assertThat(credentials.clientId()).contains("client-fraud");
    }

    @Test
    void environmentVariablesBeatTheChalkYml() throws IOException {
        writeChalkYml(home, ".chalk.yml");

        ChalkCredentials credentials = resolver(Map.of(
                        "CHALK_CLIENT_ID", "client-env",
                        "CHALK_CLIENT_SECRET", "env-secret-value",
                        "CHALK_API_SERVER", "https://env.chalk.example",
                        "CHALK_ENVIRONMENT", "env-from-env"))
                .resolve();

        assertThat(credentials.source()).isEqualTo(CredentialSource.ENVIRONMENT);
        assertThat(credentials.clientId()).contains("client-env");
        assertThat(credentials.clientSecret()).contains("env-secret-value");
        assertThat(credentials.apiServer()).contains("https://env.chalk.example");
        assertThat(credentials.environment()).contains("env-from-env");
        assertThat(credentials.validUntil()).isEmpty();
    }

    @Test
    void anIdentityFromTheEnvironmentDoesNotBorrowFromTheChalkYml() throws IOException {
        writeChalkYml(home, ".chalk.yml");

        ChalkCredentials credentials = resolver(
                        Map.of("CHALK_CLIENT_ID", "client-env", "CHALK_CLIENT_SECRET", "env-secret-value"))
                .resolve();

        assertThat(credentials.apiServer()).isEmpty();
        assertThat(credentials.apiServerOrDefault()).isEqualTo("https://api.chalk.ai");
        assertThat(credentials.environment()).isEmpty();
    }

    @Test
    void environmentVariablesOverrideTheServerAndEnvironmentOfAChalkYmlLogin() throws IOException {
        writeChalkYml(home, ".chalk.yml");

        ChalkCredentials credentials = resolver(Map.of(
                        "CHALK_API_SERVER", "https://env.chalk.example",
                        "CHALK_ENVIRONMENT_ID", "env-id-from-env"))
                .resolve();

        assertThat(credentials.source()).isEqualTo(CredentialSource.CHALK_YML);
        assertThat(credentials.clientId()).contains("client-fraud");
        assertThat(credentials.apiServer()).contains("https://env.chalk.example");
        assertThat(credentials.environment()).contains("env-id-from-env");
    }

    @Test
    void chalkEnvironmentBeatsChalkEnvironmentId() {
        ChalkCredentials credentials = resolver(Map.of("CHALK_ENVIRONMENT", "by-name", "CHALK_ENVIRONMENT_ID", "by-id"))
                .resolve();

        assertThat(credentials.environment()).contains("by-name");
    }

    @Test
    void explicitValuesBeatEnvironmentVariablesAndTheChalkYml() throws IOException {
        writeChalkYml(home, ".chalk.yml");

        ChalkCredentials credentials = resolver(Map.of(
                        "CHALK_CLIENT_ID", "client-env",
                        "CHALK_CLIENT_SECRET", "env-secret-value",
                        "CHALK_API_SERVER", "https://env.chalk.example",
                        "CHALK_ENVIRONMENT", "env-from-env"))
                .clientId("client-explicit")
                .clientSecret("explicit-secret-value")
                .apiServer("https://explicit.chalk.example")
                .environment("env-explicit")
                .resolve();

        assertThat(credentials.source()).isEqualTo(CredentialSource.EXPLICIT);
        assertThat(credentials.clientId()).contains("client-explicit");
        assertThat(credentials.clientSecret()).contains("explicit-secret-value");
        assertThat(credentials.apiServer()).contains("https://explicit.chalk.example");
        assertThat(credentials.environment()).contains("env-explicit");
    }

    @Test
    void unsetExplicitValuesFallThroughAndAnExplicitIdMayTakeItsSecretFromTheEnvironment() {
        ChalkCredentials credentials = resolver(Map.of(
                        "CHALK_CLIENT_ID", "client-env",
                        "CHALK_CLIENT_SECRET", "env-secret-value",
                        "CHALK_API_SERVER", "https://env.chalk.example"))
                .clientId("client-explicit")
                .clientSecret(null)
                .apiServer("  ")
                .environment(null)
                .resolve();

        assertThat(credentials.source()).isEqualTo(CredentialSource.EXPLICIT);
        assertThat(credentials.clientId()).contains("client-explicit");
        assertThat(credentials.clientSecret()).contains("env-secret-value");
        assertThat(credentials.apiServer()).contains("https://env.chalk.example");
    }

    @Test
    void anExplicitTokenFileBeatsClientCredentialsFromTheEnvironment() {
        Path file = tmp.resolve("token");
        ChalkCredentials credentials = resolver(
                        Map.of("CHALK_CLIENT_ID", "client-env", "CHALK_CLIENT_SECRET", "env-secret-value"))
                .tokenFile(file)
                .resolve();

        assertThat(credentials.source()).isEqualTo(CredentialSource.EXPLICIT);
        assertThat(credentials.hasClientCredentials()).isFalse();
        assertThat(credentials.tokenFile()).contains(file);
        try (TokenSource tokens = TokenSource.from(credentials)) {
            assertThat(tokens).isInstanceOf(TokenFileSource.class);
        }
    }

    @Test
    void aTokenFileFromTheEnvironmentIsUsedAndAnEnvironmentVariableBeatsItsClaim() throws IOException {
        writeChalkYml(home, ".chalk.yml");
        Path file = tmp.resolve("identity-token");
        Jwts.rotate(file, Jwts.jwt("workload", Instant.now().plusSeconds(3600), "env-claimed"));

        ChalkCredentials fromClaim = resolver(Map.of("CHALK_WEB_IDENTITY_TOKEN_FILE", file.toString()))
                .resolve();
        assertThat(fromClaim.source()).isEqualTo(CredentialSource.ENVIRONMENT);
        assertThat(fromClaim.hasClientCredentials())
                .as("~/.chalk.yml is not consulted")
                .isFalse();
        try (TokenSource tokens = TokenSource.from(fromClaim)) {
            assertThat(tokens).isInstanceOf(TokenFileSource.class);
            assertThat(tokens.token().environment()).contains("env-claimed");
        }

        ChalkCredentials overridden = resolver(
                        Map.of("CHALK_WEB_IDENTITY_TOKEN_FILE", file.toString(), "CHALK_ENVIRONMENT_ID", "env-chosen"))
                .resolve();
        try (TokenSource tokens = TokenSource.from(overridden)) {
            assertThat(tokens.token().environment()).contains("env-chosen");
        }
    }

    @Test
    void clientCredentialsBecomeAClientCredentialsSource() {
        ChalkCredentials credentials = resolver(Map.of(
                        "CHALK_CLIENT_ID",
                        "client-env",
                        "CHALK_CLIENT_SECRET",
                        "env-secret-value",
                        "CHALK_API_SERVER",
                        "http://127.0.0.1:1"))
                .resolve();
        try (TokenSource tokens = TokenSource.from(credentials)) {
            assertThat(tokens).isInstanceOf(ClientCredentialsTokenSource.class);
            assertThat(tokens.toString()).contains("client-env").doesNotContain("env-secret-value");
        }
    }

    @Test
    void findingNothingIsNotAnErrorUntilATokenSourceIsNeeded() {
        ChalkCredentials credentials = resolver(Map.of()).resolve();

        assertThat(credentials.hasIdentity()).isFalse();
        assertThat(credentials.source()).isEqualTo(CredentialSource.NONE);
        Throwable failure = catchThrowable(() -> TokenSource.from(credentials));
        assertThat(failure)
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("CHALK_CLIENT_ID")
                .hasMessageContaining("CHALK_WEB_IDENTITY_TOKEN_FILE")
                .hasMessageContaining("chalk login");

        Throwable halfOnly = catchThrowable(
                () -> TokenSource.from(resolver(Map.of("CHALK_CLIENT_ID", "x")).resolve()));
        assertThat(halfOnly)
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("CHALK_CLIENT_SECRET");
    }

    @Test
    void toStringMasksTheSecret() throws IOException {
        writeChalkYml(home, ".chalk.yml");
        ChalkCredentials credentials = resolver(Map.of()).resolve();

        assertThat(credentials.toString())
                .contains("client-fraud")
                .contains("clientSecret=****")
                .doesNotContain(YML_SECRET);
        assertThat(ChalkCredentials.ofClientCredentials("id", "explicit-secret-value")
                        .toString())
                .doesNotContain("explicit-secret-value");
        assertThat(ChalkCredentials.builder()
                        .clientSecret("builder-secret-value")
                        .toString())
                .doesNotContain("builder-secret-value");
        assertThat(ClientCredentialsTokenSource.builder()
                        .clientSecret("builder-secret-value")
                        .toString())
                .doesNotContain("builder-secret-value");
    }

    @Test
    void aBrokenChalkYmlIsReportedWithoutQuotingIt() throws IOException {
        Files.writeString(home.resolve(".chalk.yml"), """
                tokens:
                  default:
                    clientId: client-default
                    clientSecret: [%s
                """.formatted(YML_SECRET));

        Throwable failure = catchThrowable(() -> resolver(Map.of()).resolve());

        assertThat(failure)
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining(".chalk.yml")
                .hasMessageContaining("line");
        assertThat(failure.getMessage()).doesNotContain(YML_SECRET);
        assertThat(failure.getCause()).isNull();
    }

    @Test
    void validUntilIsReadInTheFormsTheCliWrites() {
        Path file = Path.of(".chalk.yml");
        assertThat(ChalkYml.timestamp("2030-01-02 03:04:05.5 +0100 CET", file, "k"))
                .contains(Instant.parse("2030-01-02T02:04:05.5Z"));
        assertThat(ChalkYml.timestamp("2030-01-02T03:04:05Z", file, "k"))
                .contains(Instant.parse("2030-01-02T03:04:05Z"));
        assertThat(ChalkYml.timestamp("2030-01-02T03:04:05", file, "k"))
                .contains(Instant.parse("2030-01-02T03:04:05Z"));
        assertThat(ChalkYml.timestamp(java.util.Date.from(Instant.parse("2030-01-02T03:04:05Z")), file, "k"))
                .contains(Instant.parse("2030-01-02T03:04:05Z"));
        assertThat(ChalkYml.timestamp("soon", file, "k")).isEmpty();
    }

    @Test
    void anUnquotedYamlTimestampIsAcceptedToo() throws IOException {
        Map<String, String> none = new HashMap<>();
        Files.writeString(home.resolve(".chalk.yml"), """
                tokens:
                  default:
                    clientId: c
                    clientSecret: s
                    validUntil: 2030-01-02T03:04:05Z
                """);
        assertThat(resolver(none).resolve().validUntil()).contains(Instant.parse("2030-01-02T03:04:05Z"));
    }
}
