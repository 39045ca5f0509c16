package ai.chalk.compute.server.runtime.seccomp;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ArgValuesTest {

    private static boolean matchesAny(List<ArgCondition> alternatives, long value) {
        return alternatives.stream().anyMatch(c -> (value & c.datumA()) == c.datumB());
    }

    @Test
    void anyButMatchesEveryValueExceptTheExcludedOnesWhateverTheHighBits() {
        List<ArgCondition> c = ArgValues.anyBut(1, 12, 0x412, 0x41C);
        for (long v = 0; v < 1 << 12; v++) {
            boolean excluded = v == 0x412 || v == 0x41C;
            assertThat(matchesAny(c, v)).as("0x%x", v).isEqualTo(!excluded);
            assertThat(matchesAny(c, v | 0x7000_0000_0000_0000L))
                    .as("0x%x with high bits", v)
                    .isEqualTo(!excluded);
        }
        assertThat(c).allSatisfy(a -> assertThat(a.arg()).isEqualTo(1));
        assertThat(ArgValues.anyBut(1, 32, 0x5412, 0x541C)).hasSize(34);
    }

    @Test
    void betweenMatchesExactlyTheRangeAndNoValueWithHighBits() {
        List<ArgCondition> c = ArgValues.between(0, 17, 37);
        for (long v = 0; v < 256; v++) {
            assertThat(matchesAny(c, v)).as("%d", v).isEqualTo(v >= 17 && v <= 37);
            assertThat(matchesAny(c, v | 1L << 32)).as("%d with bit 32", v).isFalse();
        }
        assertThat(ArgValues.between(0, 0, 63)).hasSize(1);
        assertThat(ArgValues.between(0, 41, 63)).hasSize(4);
    }
}
