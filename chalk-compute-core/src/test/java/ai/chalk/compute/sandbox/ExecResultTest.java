package ai.chalk.compute.sandbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class ExecResultTest {

    private static ExecResult result(String stdout, String stderr) {
        return new ExecResult(stdout.getBytes(UTF_8), stderr.getBytes(UTF_8), 0, OptionalInt.empty());
    }

    @Test
    void splitsLinesWithoutATrailingEmptyLine() {
        assertThat(result("a\nb\n", "").stdout()).containsExactly("a", "b");
        assertThat(result("a\nb", "").stdout()).containsExactly("a", "b");
        assertThat(result("", "").stdout()).isEmpty();
        assertThat(result("\n", "").stdout()).containsExactly("");
        assertThat(result("a\n\nb\n\n", "").stdout()).containsExactly("a", "", "b", "");
        assertThat(result("x\r\n", "err 1\nerr 2\n").stderr()).containsExactly("err 1", "err 2");
        assertThat(result("x\r\n", "").stdout()).containsExactly("x\r");
    }

    @Test
    void textAndBytesAreTheSameOutput() {
        ExecResult r = result("héllo wörld\n", "oops\n");
        assertThat(r.stdoutText()).isEqualTo("héllo wörld\n");
        assertThat(r.stdoutBytes()).isEqualTo("héllo wörld\n".getBytes(UTF_8));
        assertThat(r.stderrText()).isEqualTo("oops\n");
        assertThat(r.stderrBytes()).isEqualTo("oops\n".getBytes(UTF_8));
    }

    @Test
    void successMeansExitCodeZeroWithoutSignal() {
        assertThat(result("", "").success()).isTrue();
        assertThat(new ExecResult(new byte[0], new byte[0], 3, OptionalInt.empty()).success())
                .isFalse();
        assertThat(new ExecResult(new byte[0], new byte[0], 137, OptionalInt.of(9)).success())
                .isFalse();
    }

    @Test
    void isImmutableAndComparesByContent() {
        byte[] out = "abc".getBytes(UTF_8);
        ExecResult r = new ExecResult(out, new byte[0], 0, OptionalInt.empty());
        out[0] = 'x';
        r.stdoutBytes()[1] = 'y';
        assertThat(r.stdoutText()).isEqualTo("abc");
        assertThat(r).isEqualTo(result("abc", "")).hasSameHashCodeAs(result("abc", ""));
        assertThat(r.toString()).contains("exitCode=0").contains("3 bytes");
    }

    @Test
    void exitedEventReportsTheShellStatus() {
        assertThat(new ExecEvent.Exited(OptionalInt.of(3), OptionalInt.empty()).status())
                .isEqualTo(3);
        assertThat(new ExecEvent.Exited(OptionalInt.empty(), OptionalInt.of(15)).status())
                .isEqualTo(143);
        ExecEvent event = new ExecEvent.Exited(OptionalInt.of(0), OptionalInt.empty());
        assertThat(event.isExited()).isTrue();
        assertThat(event.exitCode()).hasValue(0);
        assertThat(event.stdoutText()).isNull();
        ExecEvent out = new ExecEvent.Stdout("hi".getBytes(UTF_8));
        assertThat(out.stdoutText()).isEqualTo("hi");
        assertThat(out.stderrText()).isNull();
        assertThat(out.isExited()).isFalse();
        assertThat(out.exitCode()).isEmpty();
        assertThat(out).isEqualTo(new ExecEvent.Stdout("hi".getBytes(UTF_8)));
    }
}
