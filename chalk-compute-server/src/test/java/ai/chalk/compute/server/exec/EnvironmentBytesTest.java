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
    void countedBytesStopAnEnvironmentAtItsShareAtItsEvenPartOfAFullServerAndEveryoneAtTwiceTheBudget() {
        ByteBudget budget = new ByteBudget("test bytes", 120);
        EnvironmentBytes bytes = new EnvironmentBytes(budget);
        bytes.count("dev", 60);
        assertThat(bytes.full("dev")).isEqualTo(EnvironmentBytes.Refusal.ENVIRONMENT_SHARE);
        assertThat(bytes.full("prod")).as("the server holds half its budget").isNull();

        bytes.count("prod", 50);
        bytes.tryReserve("staging", 10);
        // the server holds 120 of 120: an environment holding its even part (120 / 3) is refused, one below it is not
        assertThat(bytes.full("prod")).isEqualTo(EnvironmentBytes.Refusal.SERVER_FULL);
        assertThat(bytes.full("staging")).as("10 of its 40").isNull();
        assertThat(bytes.full("test"))
                .as("a fourth environment, holding nothing")
                .isNull();
        assertThat(bytes.of("prod").explain(EnvironmentBytes.Refusal.SERVER_FULL))
                .isEqualTo("the server holds 10 bytes of test bytes and 110 more in streamed messages, of its 120,"
                        + " and this environment 50 (its even part: 40)");
        assertThat(bytes.of("prod").explain(EnvironmentBytes.Refusal.BUDGET))
                .as("the budget's own refusal speaks of reserved bytes alone")
                .isEqualTo("the server holds 10 of its 120 bytes of test bytes");

        // environments admitted one after the other, each under its even part, stop at twice the budget
        bytes.count("staging", 40);
        bytes.count("test", 50);
        assertThat(bytes.full("other")).isNull();
        bytes.count("other", 30);
        assertThat(bytes.full("staging"))
                .as("240 held, staging 50 of its even part 24")
                .isEqualTo(EnvironmentBytes.Refusal.SERVER_FULL);
        assertThat(bytes.full("newcomer"))
                .as("holding nothing: not refused for what others hold")
                .isNull();
        bytes.count("newcomer", 1);
        assertThat(bytes.full("newcomer"))
                .as("241 held: twice the budget")
                .isEqualTo(EnvironmentBytes.Refusal.SERVER_FULL);

        bytes.uncount("other", 100); // more than it counted: only what it counted is given back
        assertThat(bytes.of("prod").explain(EnvironmentBytes.Refusal.SERVER_FULL))
                .startsWith("the server holds 10 bytes of test bytes and 201 more in streamed messages");
    }

    @Test
    void oneTenantAtTwiceTheBudgetAloneDoesNotRefuseTheOthersTheirFirstStreams() {
        // a budget smaller than the largest piece: one environment may hold all of it, reserved and counted apart
        EnvironmentBytes bytes = new EnvironmentBytes(new ByteBudget("test bytes", 100), 1_000);
        assertThat(bytes.share()).isEqualTo(100);
        assertThat(bytes.tryReserve("dev", 100)).isNull();
        bytes.count("dev", 99);
        assertThat(bytes.full("dev")).isEqualTo(EnvironmentBytes.Refusal.ENVIRONMENT_SHARE);
        assertThat(bytes.full("prod")).isNull();
        bytes.count("prod", 1);
        assertThat(bytes.full("prod"))
                .as("200 held, prod 1 of its even part 50")
                .isNull();
        bytes.count("prod", 49);
        assertThat(bytes.full("prod")).isEqualTo(EnvironmentBytes.Refusal.SERVER_FULL);
    }

    @Test
    void aBudgetAsLargeAsALongRefusesNoStream() {
        EnvironmentBytes bytes = new EnvironmentBytes(new ByteBudget("test bytes", Long.MAX_VALUE));
        bytes.count("dev", 1 << 20);
        assertThat(bytes.full("dev")).isNull();
        assertThat(bytes.full("prod")).isNull();
    }
}
