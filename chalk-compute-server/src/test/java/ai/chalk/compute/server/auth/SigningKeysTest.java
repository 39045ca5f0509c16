package ai.chalk.compute.server.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Keys rotate without logging anyone out, and are kept where only the server's user reads them. */
class SigningKeysTest {

    @Test
    void aRotatedKeyStillVerifiesTheTokensItSignedUntilTheyExpire(@TempDir Path dir) throws Exception {
        Instant t0 = Instant.parse("2026-01-01T00:00:00Z");
        Path file = dir.resolve("keys.json");
        SigningKeys keys =
                new SigningKeys(file, Duration.ofDays(30), Duration.ofHours(24), Clock.fixed(t0, ZoneOffset.UTC));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
                .isEqualTo("rw-------");
        String first = keys.current().getKeyID();
        Tokens before =
                new Tokens(keys, Clock.fixed(t0.plus(Duration.ofDays(30)).minusSeconds(60), ZoneOffset.UTC), "test");
        String oldToken = before.access(
                        new Caller("default", "client:a", Caller.Kind.CLIENT), Optional.empty(), Duration.ofHours(1))
                .token();

        Instant later = t0.plus(Duration.ofDays(30)).plusSeconds(60);
        SigningKeys rotated =
                new SigningKeys(file, Duration.ofDays(30), Duration.ofHours(24), Clock.fixed(later, ZoneOffset.UTC));
        assertThat(rotated.current().getKeyID()).isNotEqualTo(first);
        assertThat(rotated.publicKeys().getKeys()).hasSize(2);
        assertThat(new Tokens(rotated, Clock.fixed(later, ZoneOffset.UTC), "test")
                        .verify(oldToken)
                        .caller()
                        .subject())
                .isEqualTo("client:a");

        // a second rotation a month on: the first key signed its last token two months ago and is dropped
        Instant muchLater = later.plus(Duration.ofDays(31));
        SigningKeys again = new SigningKeys(
                file, Duration.ofDays(30), Duration.ofHours(24), Clock.fixed(muchLater, ZoneOffset.UTC));
        assertThat(again.publicKeys().getKeys())
                .hasSize(2)
                .noneMatch(k -> k.getKeyID().equals(first));
    }

    @Test
    void keysOthersCanReadAreRefused(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("keys.json");
        new SigningKeys(file, Duration.ofDays(30), Duration.ofHours(24), Clock.systemUTC());
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(() -> new SigningKeys(file, Duration.ofDays(30), Duration.ofHours(24), Clock.systemUTC()))
                .hasMessageContaining("readable by other users");
    }
}
