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

    @Test
    void countedBytesStopAnEnvironmentAtItsShareAndAtItsEvenPartOfAFullServer() {
        ByteBudget budget = new ByteBudget("test bytes", 120);
        EnvironmentBytes bytes = new EnvironmentBytes(budget);
        bytes.count("dev", 60);
        assertThat(bytes.full("dev")).isEqualTo(EnvironmentBytes.Refusal.ENVIRONMENT_SHARE);
        assertThat(bytes.full("prod")).as("the server holds half its budget").isNull();

        bytes.count("prod", 50);
        bytes.tryReserve("staging", 10);
        // the server holds 120 of 120: an environment holding its even part (120 / 3) is refused, one below it is not
        assertThat(bytes.full("prod")).isEqualTo(EnvironmentBytes.Refusal.BUDGET);
        assertThat(bytes.full("staging")).as("10 of its 40").isNull();
        assertThat(bytes.full("test")).as("a fourth environment, nothing held").isNull();
        assertThat(bytes.of("prod").explain(EnvironmentBytes.Refusal.BUDGET))
                .isEqualTo("the server holds 10 (and 110 more in streamed messages) of its 120 bytes of test bytes");

        bytes.uncount("dev", 60);
        assertThat(bytes.full("prod")).as("the server holds 60 of 120").isNull();
        bytes.uncount("prod", 80); // more than it counted: the total does not go below what the others hold
        bytes.count("dev", 110);
        assertThat(bytes.full("staging")).as("120 held, staging's even part 60").isNull();
        bytes.count("test", 30);
        assertThat(bytes.full("test")).as("30 of its 40").isNull();
        bytes.count("test", 10);
        assertThat(bytes.full("test")).isEqualTo(EnvironmentBytes.Refusal.BUDGET);
    }
}
