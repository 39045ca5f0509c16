package ai.chalk.compute.connection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.ChalkComputeException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ConnectionSettingsTest {

    @Test
    void hostAndPortIsPlaintext() {
        assertThat(ConnectionSettings.forTarget("localhost:50051"))
                .isEqualTo(new ConnectionSettings("localhost:50051", false, Optional.empty(), Optional.empty()));
    }

    @Test
    void urlsChooseTlsAndDefaultPorts() {
        assertThat(ConnectionSettings.forTarget("https://api.chalk.ai"))
                .extracting("target", "useTls")
                .containsExactly("api.chalk.ai:443", true);
        assertThat(ConnectionSettings.forTarget("https://compute.example.com:8443/"))
                .extracting("target", "useTls")
                .containsExactly("compute.example.com:8443", true);
        assertThat(ConnectionSettings.forTarget("http://localhost:8080"))
                .extracting("target", "useTls")
                .containsExactly("localhost:8080", false);
        assertThat(ConnectionSettings.forTarget("http://box"))
                .extracting("target")
                .isEqualTo("box:80");
    }

    @Test
    void computeTargetWinsOverApiServer() {
        var settings = ConnectionSettings.fromEnv(
                Map.of("CHALK_COMPUTE_TARGET", "localhost:1234", "CHALK_API_SERVER", "https://api.chalk.ai"));
        assertThat(settings.target()).isEqualTo("localhost:1234");
        assertThat(settings.useTls()).isFalse();
    }

    @Test
    void apiServerUrlIsUsedWhenNoTargetIsSet() {
        var settings = ConnectionSettings.fromEnv(Map.of("CHALK_API_SERVER", "https://api.chalk.ai"));
        assertThat(settings.target()).isEqualTo("api.chalk.ai:443");
        assertThat(settings.useTls()).isTrue();
    }

    @Test
    void missingConfigurationIsAClearError() {
        assertThatThrownBy(() -> ConnectionSettings.fromEnv(Map.of()))
                .isInstanceOf(ChalkComputeException.class)
                .hasMessageContaining("CHALK_COMPUTE_TARGET")
                .hasMessageContaining("CHALK_API_SERVER");
        assertThatThrownBy(() -> ConnectionSettings.fromEnv(Map.of("CHALK_API_SERVER", "api.chalk.ai")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("URL");
    }

    @Test
    void tokenIsNeverShown() {
        var settings = ConnectionSettings.forTarget("localhost:1")
                .withBearerToken("s3cret")
                .withTrustCertificates(Path.of("/etc/ca.pem"));
        assertThat(settings.useTls()).isTrue();
        assertThat(settings.toString()).doesNotContain("s3cret").contains("redacted");
    }
}
