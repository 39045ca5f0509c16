package ai.chalk.compute.auth;

import static ai.chalk.compute.auth.Jwts.jwt;
import static ai.chalk.compute.auth.Jwts.rotate;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import ai.chalk.compute.error.AuthenticationException;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A real token file, rotated on disk while the source reads it. */
class TokenFileSourceTest {

    @TempDir
    Path dir;

    private final MutableClock clock = MutableClock.startingNow();

    private TokenFileSource source(Path file) {
        return TokenFileSource.builder().path(file).clock(clock).build();
    }

    @Test
    void aLongLivedTokenIsCachedForOneHourThenTheFileIsReadAgain() {
        Path file = dir.resolve("identity-token");
        String first = jwt("first", clock.instant().plus(Duration.ofHours(4)), "env-a");
        String second = jwt("second", clock.instant().plus(Duration.ofHours(5)), "env-b");
        rotate(file, first);
        TokenFileSource tokens = source(file);

        AccessToken token = tokens.token();
        assertThat(token.value()).isEqualTo(first);
        assertThat(token.environment()).contains("env-a");
        assertThat(token.expiresAt()).contains(clock.instant().plus(Duration.ofHours(4)));

        rotate(file, second);
        clock.advance(Duration.ofMinutes(59).plusSeconds(59));
        assertThat(tokens.token().value()).as("within the hour: cached").isEqualTo(first);

        clock.advance(Duration.ofSeconds(1));
        assertThat(tokens.token().value()).as("after the hour: re-read").isEqualTo(second);
        assertThat(tokens.token().environment()).contains("env-b");
    }

    @Test
    void aShortLivedTokenIsCachedForHalfItsRemainingLifetime() {
        Path file = dir.resolve("identity-token");
        String first = jwt("first", clock.instant().plus(Duration.ofMinutes(10)), "env-a");
        String second = jwt("second", clock.instant().plus(Duration.ofMinutes(20)), "env-a");
        rotate(file, first);
        TokenFileSource tokens = source(file);

        assertThat(tokens.token().value()).isEqualTo(first);
        rotate(file, second);
        clock.advance(Duration.ofMinutes(4).plusSeconds(59));
        assertThat(tokens.token().value()).isEqualTo(first);
        clock.advance(Duration.ofSeconds(2));
        assertThat(tokens.token().value()).isEqualTo(second);

        // the second token had just under 15 minutes left when read: cached for just under 7.5 minutes
        String third = jwt("third", clock.instant().plus(Duration.ofHours(1)), "env-a");
        rotate(file, third);
        clock.advance(Duration.ofMinutes(7).plusSeconds(29));
        assertThat(tokens.token().value()).isEqualTo(second);
        clock.advance(Duration.ofSeconds(2));
        assertThat(tokens.token().value()).isEqualTo(third);
    }

    @Test
    void aTokenWithoutExpIsCachedForOneHour() {
        Path file = dir.resolve("identity-token");
        String first = jwt("first", null, null);
        String second = jwt("second", null, null);
        rotate(file, first);
        TokenFileSource tokens = source(file);

        assertThat(tokens.token().value()).isEqualTo(first);
        assertThat(tokens.token().expiresAt()).isEmpty();
        assertThat(tokens.token().environment()).isEmpty();
        rotate(file, second);
        clock.advance(Duration.ofMinutes(59));
        assertThat(tokens.token().value()).isEqualTo(first);
        clock.advance(Duration.ofMinutes(1));
        assertThat(tokens.token().value()).isEqualTo(second);
    }

    @Test
    void aChangedPathBypassesTheCache() {
        Path one = dir.resolve("one");
        Path two = dir.resolve("two");
        String first = jwt("first", clock.instant().plus(Duration.ofHours(4)), "env-a");
        String second = jwt("second", clock.instant().plus(Duration.ofHours(4)), "env-b");
        rotate(one, first);
        rotate(two, second);
        AtomicReference<Path> configured = new AtomicReference<>(one);
        TokenFileSource tokens =
                TokenFileSource.builder().path(configured::get).clock(clock).build();

        assertThat(tokens.token().value()).isEqualTo(first);
        configured.set(two);
        assertThat(tokens.token().value()).isEqualTo(second);
        assertThat(tokens.token().environment()).contains("env-b");
        configured.set(one);
        assertThat(tokens.token().value()).isEqualTo(first);
    }

    @Test
    void anExplicitEnvironmentWinsOverTheClaim() {
        Path file = dir.resolve("identity-token");
        rotate(file, jwt("first", clock.instant().plus(Duration.ofHours(1)), "env-claimed"));
        TokenFileSource tokens = TokenFileSource.builder()
                .path(file)
                .environment("env-explicit")
                .clock(clock)
                .build();

        assertThat(tokens.token().environment()).contains("env-explicit");
    }

    @Test
    void anExpiredTokenIsReadAgainOnEveryCallUntilItIsRotated() {
        Path file = dir.resolve("identity-token");
        String expired = jwt("old", clock.instant().minus(Duration.ofMinutes(1)), "env-a");
        String fresh = jwt("new", clock.instant().plus(Duration.ofHours(1)), "env-a");
        rotate(file, expired);
        TokenFileSource tokens = source(file);

        assertThat(tokens.token().value()).isEqualTo(expired);
        rotate(file, fresh);
        assertThat(tokens.token().value()).isEqualTo(fresh);
    }

    @Test
    void whenTheFileVanishesThePreviousTokenIsUsedUntilItsExp() throws Exception {
        Path file = dir.resolve("identity-token");
        String first = jwt("first", clock.instant().plus(Duration.ofHours(3)), "env-a");
        rotate(file, first);
        TokenFileSource tokens = source(file);
        assertThat(tokens.token().value()).isEqualTo(first);

        Files.delete(file);
        clock.advance(Duration.ofHours(2));
        assertThat(tokens.token().value()).isEqualTo(first);

        clock.advance(Duration.ofHours(1));
        Throwable failure = catchThrowable(tokens::token);
        assertThat(failure)
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("no such file");
    }

    @Test
    void unusableFilesFailWithoutQuotingTheirContents() throws Exception {
        Path file = dir.resolve("identity-token");
        String secretLooking = "opaque-secret-token-value-123";
        Files.writeString(file, secretLooking);
        try (LogCapture logs = new LogCapture()) {
            Throwable notJwt = catchThrowable(() -> source(file).token());
            assertThat(notJwt)
                    .isInstanceOf(AuthenticationException.class)
                    .hasMessageContaining("does not hold a JWT")
                    .hasMessageNotContaining(secretLooking);
            assertThat(notJwt.getCause()).isNull();

            Files.writeString(file, "  \n");
            assertThat(catchThrowable(() -> source(file).token())).hasMessageContaining("empty");

            Throwable missing =
                    catchThrowable(() -> source(dir.resolve("missing")).token());
            assertThat(missing).isInstanceOf(AuthenticationException.class).hasMessageContaining("no such file");
            assertThat(logs.all()).doesNotContain(secretLooking);
        }
    }

    @Test
    void theInterceptorSendsTheFileTokenAndItsEnvironmentClaim() throws Exception {
        Path file = dir.resolve("identity-token");
        String first = jwt("workload", clock.instant().plus(Duration.ofHours(2)), "env-from-claim");
        rotate(file, first);
        try (LogCapture logs = new LogCapture();
                AuthTestServer server = new AuthTestServer(new RecordingAuthService(clock, "unused", "unused"))) {
            ChalkAuthInterceptor interceptor = new ChalkAuthInterceptor(source(file));

            assertThat(server.check(interceptor)).isEqualTo(ServingStatus.SERVING);
            assertThat(server.recorder.last().authorization()).isEqualTo("Bearer " + first);
            assertThat(server.recorder.last().environment()).isEqualTo("env-from-claim");

            String second = jwt("workload", clock.instant().plus(Duration.ofHours(3)), "env-from-claim");
            rotate(file, second);
            clock.advance(Duration.ofHours(1));
            server.check(interceptor);
            assertThat(server.recorder.last().authorization()).isEqualTo("Bearer " + second);
            assertThat(server.auth.calls()).as("no exchange for a token file").isZero();
            assertThat(logs.all()).doesNotContain(first).doesNotContain(second);
        }
    }

    @Test
    void toStringNeverShowsTheToken() {
        Path file = dir.resolve("identity-token");
        String token = jwt("first", Instant.now().plusSeconds(3600), "env-a");
        rotate(file, token);
        TokenFileSource tokens = source(file);
        AccessToken read = tokens.token();
        assertThat(read.toString()).doesNotContain(token).contains("****").contains("env-a");
        assertThat(tokens.toString()).doesNotContain(token).contains(file.toString());
    }
}
