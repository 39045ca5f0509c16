package ai.chalk.compute.server.exec;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** One environment holds at most half of a shared budget; the others' reservations go on while it is at its half. */
class EnvironmentBytesTest {

    @Test
    void oneEnvironmentHoldsAtMostHalfAndTheBudgetBoundsThemAll() {
        ByteBudget budget = new ByteBudget("test bytes", 100);
        EnvironmentBytes bytes = new EnvironmentBytes(budget);
        assertThat(bytes.share()).isEqualTo(50);

        assertThat(bytes.tryReserve("dev", 40)).isNull();
        assertThat(bytes.tryReserve("dev", 11)).isEqualTo(EnvironmentBytes.Refusal.ENVIRONMENT_SHARE);
        assertThat(bytes.held("dev")).as("a refusal reserves nothing").isEqualTo(40);
        assertThat(bytes.tryReserve("dev", 10)).isNull();

        assertThat(bytes.tryReserve("prod", 45)).isNull();
        assertThat(bytes.tryReserve("staging", 6)).isEqualTo(EnvironmentBytes.Refusal.BUDGET);
        assertThat(budget.used()).isEqualTo(95);

        bytes.release("dev", 50);
        assertThat(bytes.held("dev")).isZero();
        assertThat(budget.used()).isEqualTo(45);
        assertThat(bytes.tryReserve("staging", 6)).isNull();
        assertThat(bytes.tryReserve("dev", 0)).as("nothing to reserve").isNull();
    }
}
