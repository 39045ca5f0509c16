package ai.chalk.compute.server.threads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.error.ComputeException;
import org.junit.jupiter.api.Test;

/**
 * One environment holds at most its share of the places, the server its limit, and a place closed twice is given back
 * once: a holder that ends on two paths must not free another holder's place.
 */
class EnvironmentSharesTest {

    private static final EnvironmentShares.Refusals SAYS_WHY = (refusal, counts, key) -> key + ": " + refusal;

    @Test
    void aPlaceClosedTwiceIsGivenBackOnce() {
        EnvironmentShares shares = new EnvironmentShares("test places", 4);
        EnvironmentShares.Place first = shares.take("dev", SAYS_WHY);
        EnvironmentShares.Place second = shares.take("dev", SAYS_WHY);
        assertThatThrownBy(() -> shares.take("dev", SAYS_WHY))
                .isInstanceOfSatisfying(
                        ComputeException.class, e -> assertThat(e.kind()).isEqualTo(ComputeException.Kind.EXHAUSTED))
                .hasMessage("dev: ENVIRONMENT_SHARE");
        assertThat(shares.held("dev")).as("a refusal takes nothing").isEqualTo(2);

        first.close();
        first.close();
        assertThat(shares.held("dev"))
                .as("the second close freed no one else's place")
                .isEqualTo(1);
        assertThat(shares.held()).isEqualTo(1);
        second.close();
        assertThat(shares.held("dev")).isZero();
    }

    @Test
    void theServerLimitBoundsEveryEnvironmentTogether() {
        EnvironmentShares shares = new EnvironmentShares("test places", 5, 3);
        shares.take("dev", SAYS_WHY);
        shares.take("dev", SAYS_WHY);
        shares.take("prod", SAYS_WHY);
        EnvironmentShares.Place staging = shares.take("staging", SAYS_WHY);
        shares.take("staging", SAYS_WHY);
        assertThatThrownBy(() -> shares.take("qa", SAYS_WHY)).hasMessage("qa: SERVER_LIMIT");
        staging.close();
        assertThat(shares.take("qa", SAYS_WHY)).isNotNull();
        assertThat(shares.held()).isEqualTo(shares.limit());
    }

    @Test
    void aLimitOneEnvironmentWouldHoldWhollyIsRefused() {
        assertThatThrownBy(() -> new EnvironmentShares("test places", 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("test places");
    }
}
