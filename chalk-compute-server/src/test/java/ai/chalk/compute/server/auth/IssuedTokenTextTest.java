package ai.chalk.compute.server.auth;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import org.junit.jupiter.api.Test;

/** An issued token turned into text (a log line, a message) shows when it expires, never the token. */
class IssuedTokenTextTest {

    @Test
    void anIssuedTokenIsNotInItsText() {
        Tokens.Issued issued = new Tokens.Issued("eyJ.not-to-be-shown.sig", Instant.EPOCH);
        assertThat(issued.toString()).doesNotContain("not-to-be-shown").contains("1970-01-01T00:00:00Z");
    }
}
