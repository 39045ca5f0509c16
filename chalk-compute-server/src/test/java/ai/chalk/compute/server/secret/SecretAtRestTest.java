package ai.chalk.compute.server.secret;

import static ai.chalk.compute.server.secret.SecretServiceTest.admin;
import static ai.chalk.compute.server.secret.SecretServiceTest.integrations;
import static ai.chalk.compute.server.secret.SecretServiceTest.secrets;
import static ai.chalk.compute.server.secret.SecretServiceTest.status;
import static ai.chalk.compute.server.secret.SecretServiceTest.upsert;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.integrations.v1.PutIntegrationRequest;
import ai.chalk.compute.proto.server.v1.GetIntegrationValueRequest;
import ai.chalk.compute.proto.server.v1.GetSecretValueRequest;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.RunningServer;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Base64;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Secrets at rest: the database file holds no value in the clear, a ciphertext altered or moved to another row does
 * not open (and says so without any value), and the key file is the server's alone.
 */
class SecretAtRestTest {

    @Test
    void theDatabaseHoldsCiphertextOnlyAndATamperedOrMovedValueDoesNotOpen(@TempDir Path dataDir) throws Exception {
        String first = "first-plaintext-" + UUID.randomUUID();
        String second = "second-plaintext-" + UUID.randomUUID();
        String integrationValue = "integration-plaintext-" + UUID.randomUUID();
        try (RunningServer server = RunningServer.start(dataDir)) {
            secrets(server.channel).upsertSecret(upsert("FIRST", first));
            secrets(server.channel).upsertSecret(upsert("SECOND", second));
            admin(server.channel)
                    .putIntegration(PutIntegrationRequest.newBuilder()
                            .setName("pg")
                            .putValues("PGPASSWORD", integrationValue)
                            .build());
        }
        Path key = dataDir.resolve("secrets.key");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(key)))
                .isEqualTo("rw-------");
        assertThat(Base64.getDecoder().decode(Files.readString(key).strip())).hasSize(32);

        // no byte sequence of any value anywhere in the state directory (the database file and whatever H2 keeps)
        try (var files = Files.walk(dataDir.resolve("state"))) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                String raw = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
                assertThat(raw)
                        .as(f.toString())
                        .doesNotContain(first)
                        .doesNotContain(second)
                        .doesNotContain(integrationValue)
                        .doesNotContain(Base64.getEncoder().encodeToString(first.getBytes(StandardCharsets.UTF_8)));
            }
        }
        try (Connection c = h2(dataDir)) {
            byte[] firstSealed = sealed(c, "FIRST");
            byte[] secondSealed = sealed(c, "SECOND");
            assertThat(firstSealed.length).as("nonce, ciphertext, tag").isEqualTo(12 + first.length() + 16);
            assertThat(new String(firstSealed, StandardCharsets.ISO_8859_1)).doesNotContain(first);
            // SECOND's row now holds FIRST's ciphertext (a valid one, of another name); FIRST's one byte altered
            setSealed(c, "SECOND", firstSealed);
            firstSealed[20] ^= 1;
            setSealed(c, "FIRST", firstSealed);
            assertThat(secondSealed).isNotEqualTo(firstSealed);
        }
        try (RunningServer server = RunningServer.start(dataDir)) {
            for (String name : new String[] {"FIRST", "SECOND"}) {
                Status s = status(() -> secrets(server.channel)
                        .getSecretValue(
                                GetSecretValueRequest.newBuilder().setId(name).build()));
                assertThat(s.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                assertThat(s.getDescription())
                        .contains("secret " + name, "cannot be decrypted")
                        .doesNotContain(first)
                        .doesNotContain(second);
            }
            assertThat(integrations(server.channel)
                            .getIntegrationValue(GetIntegrationValueRequest.newBuilder()
                                    .setIntegrationId("pg")
                                    .setSecretName("PGPASSWORD")
                                    .build())
                            .getSecretvalue()
                            .getValue())
                    .as("untouched, and readable with the same key after a restart")
                    .isEqualTo(integrationValue);
        }
    }

    @Test
    void aKeyFileOthersCanReadIsRefusedAtStart(@TempDir Path dataDir) throws Exception {
        ComputeServer.builder().dataDir(dataDir).build().start().close();
        Path key = dataDir.resolve("secrets.key");
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(
                        () -> ComputeServer.builder().dataDir(dataDir).build().start())
                .isInstanceOf(IOException.class)
                .hasMessageContaining(key.toString())
                .hasMessageContaining("rw-r--r--")
                .hasMessageContaining("chmod 600");
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
        ComputeServer.builder().dataDir(dataDir).build().start().close();
    }

    @Test
    void aKeyFileOfTheOperatorsChoiceIsUsedAndNoneIsMadeInTheDataDirectory(@TempDir Path dataDir, @TempDir Path keys)
            throws Exception {
        Path key = keys.resolve("operator.key");
        assertThatThrownBy(() -> ComputeServer.builder()
                        .dataDir(dataDir)
                        .secretsKeyFile(key)
                        .build()
                        .start())
                .isInstanceOf(IOException.class)
                .hasMessageContaining("does not exist");
        Files.createFile(key, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(key, "not base64 at all!\n");
        assertThatThrownBy(() -> ComputeServer.builder()
                        .dataDir(dataDir)
                        .secretsKeyFile(key)
                        .build()
                        .start())
                .isInstanceOf(IOException.class)
                .hasMessageContaining("not base64");
        byte[] material = new byte[32];
        new java.security.SecureRandom().nextBytes(material);
        Files.writeString(key, Base64.getEncoder().encodeToString(material) + "\n");
        try (RunningServer server = RunningServer.start(dataDir, b -> b.secretsKeyFile(key))) {
            secrets(server.channel).upsertSecret(upsert("WITH_OPERATOR_KEY", "v"));
        }
        assertThat(dataDir.resolve("secrets.key")).doesNotExist();
        // the same data with another key: the value does not open
        try (RunningServer server = RunningServer.start(dataDir)) {
            assertThat(status(() -> secrets(server.channel)
                                    .getSecretValue(GetSecretValueRequest.newBuilder()
                                            .setId("WITH_OPERATOR_KEY")
                                            .build()))
                            .getCode())
                    .isEqualTo(Status.Code.FAILED_PRECONDITION);
        }
    }

    @Test
    void theCipherBindsEachValueToItsAssociatedData() throws Exception {
        byte[] k = new byte[32];
        SecretCipher cipher = SecretCipher.of(k);
        byte[] a = cipher.encrypt("same", "secret\0dev\0A");
        byte[] b = cipher.encrypt("same", "secret\0dev\0A");
        assertThat(a).as("a fresh nonce per value").isNotEqualTo(b);
        assertThat(cipher.decrypt(a, "secret\0dev\0A")).isEqualTo("same");
        assertThatThrownBy(() -> cipher.decrypt(a, "secret\0prod\0A")).isInstanceOf(GeneralSecurityException.class);
        assertThatThrownBy(() -> SecretCipher.of(new byte[16])).isInstanceOf(IllegalArgumentException.class);
    }

    private static Connection h2(Path dataDir) throws Exception {
        return DriverManager.getConnection(
                "jdbc:h2:" + dataDir.resolve("state").resolve("chalk-compute").toAbsolutePath() + ";FILE_LOCK=FS",
                "sa",
                "");
    }

    private static byte[] sealed(Connection c, String name) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("SELECT sealed FROM secret WHERE name = ?")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getBytes(1);
            }
        }
    }

    private static void setSealed(Connection c, String name, byte[] sealed) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("UPDATE secret SET sealed = ? WHERE name = ?")) {
            ps.setBytes(1, sealed);
            ps.setString(2, name);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }
}
