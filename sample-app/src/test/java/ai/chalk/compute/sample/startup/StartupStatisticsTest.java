package ai.chalk.compute.sample.startup;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The statistics {@link StarterStartupBenchmark} reports its paired differences with. */
class StartupStatisticsTest {

    @Test
    void quartilesAreInterpolatedBetweenTheNearestRanks() {
        long[] values = {40, 10, 30, 20};

        assertThat(StarterStartupBenchmark.quantile(values, 0.5)).isEqualTo(25);
        assertThat(StarterStartupBenchmark.quantile(values, 0.25)).isEqualTo(18);
        assertThat(StarterStartupBenchmark.quantile(values, 0.75)).isEqualTo(33);
        assertThat(values).containsExactly(40, 10, 30, 20);
    }

    @Test
    void theMediansIntervalLeavesOutAsManyValuesOnEachSideAsTheSignTestAllows() {
        // n = 11: P(Binomial(11, 1/2) <= 1) = 0.6% and P(<= 2) = 3.3%, so one value on each side is left out
        long[] eleven = {5, 1, 9, 3, 11, 7, 2, 10, 4, 8, 6};
        assertThat(StarterStartupBenchmark.medianInterval(eleven)).containsExactly(2, 10);
        // n = 15: P(<= 3) = 1.8%, P(<= 4) = 5.9%: three on each side
        long[] fifteen = new long[15];
        for (int i = 0; i < 15; i++) {
            fifteen[i] = 100 - i;
        }
        assertThat(StarterStartupBenchmark.medianInterval(fifteen)).containsExactly(89, 97);
    }

    @Test
    void withTooFewValuesForNinetyFivePercentTheIntervalIsTheWholeRange() {
        // n = 5: even the whole range holds the median with only 94% (1 - 2/32)
        assertThat(StarterStartupBenchmark.medianInterval(new long[] {3, -1, 4, 1, 5}))
                .containsExactly(-1, 5);
    }
}
