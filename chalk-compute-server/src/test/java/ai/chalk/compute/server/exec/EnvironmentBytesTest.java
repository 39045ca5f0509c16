package ai.chalk.compute.server.exec;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
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
                .isEqualTo("the environments together hold 120 bytes of test bytes (10 reserved, 110 in streamed"
                        + " messages; each counted up to its share of 60), the server's 120 or more, and this"
                        + " environment 50, its even part of them (40) or more");
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

        assertThat(bytes.of("prod").explain(EnvironmentBytes.Refusal.SERVER_FULL))
                .isEqualTo("the environments together hold 241 bytes of test bytes (10 reserved, 231 in streamed"
                        + " messages; each counted up to its share of 60), twice the server's 120");

        bytes.uncount("other", 100); // more than it counted: only what it counted is given back
        assertThat(bytes.of("prod").explain(EnvironmentBytes.Refusal.SERVER_FULL))
                .startsWith("the environments together hold 211 bytes of test bytes (10 reserved, 201 in streamed");
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
    void atTwiceTheBudgetEveryEnvironmentHoldingBytesIsRefusedBelowItsEvenPartToo() {
        EnvironmentBytes bytes = new EnvironmentBytes(new ByteBudget("test bytes", 120));
        for (String environment : List.of("a", "b", "c")) {
            bytes.count(environment, 60);
        }
        bytes.count("d", 59);
        bytes.count("small", 1);
        // 240 held together, exactly twice the budget; small's even part is 24
        assertThat(bytes.full("small")).isEqualTo(EnvironmentBytes.Refusal.SERVER_FULL);
        bytes.uncount("d", 1);
        assertThat(bytes.full("small")).as("239 held").isNull();
    }

    @Test
    void aBudgetAsLargeAsALongRefusesNoStream() {
        EnvironmentBytes bytes = new EnvironmentBytes(new ByteBudget("test bytes", Long.MAX_VALUE));
        bytes.count("dev", Long.MAX_VALUE / 4);
        bytes.count("prod", Long.MAX_VALUE / 4);
        assertThat(bytes.full("dev")).isNull();
        assertThat(bytes.full("prod")).isNull();
    }
}
