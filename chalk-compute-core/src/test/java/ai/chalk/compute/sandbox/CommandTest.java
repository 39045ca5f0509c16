package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.ExecInit;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CommandTest {

    @Test
    void mapsEveryOptionToExecInit() {
        ExecInit init = Command.of("python", "train.py", "--epochs", "3")
                .workdir("/app")
                .env("CUDA_VISIBLE_DEVICES", "0")
                .env(Map.of("A", "1"))
                .timeout(Duration.ofMinutes(60))
                .pty(120, 40)
                .toInit("sb-1");
        assertThat(init.getSandboxId()).isEqualTo("sb-1");
        assertThat(init.getCommand()).isEqualTo("python");
        assertThat(init.getArgsList()).containsExactly("train.py", "--epochs", "3");
        assertThat(init.getWorkdir()).isEqualTo("/app");
        assertThat(init.getEnvMap()).containsOnly(Map.entry("CUDA_VISIBLE_DEVICES", "0"), Map.entry("A", "1"));
        assertThat(init.getTimeoutSecs()).isEqualTo(3600);
        assertThat(init.getPtyInfo().getCols()).isEqualTo(120);
        assertThat(init.getPtyInfo().getRows()).isEqualTo(40);
    }

    @Test
    void unsetOptionsAreNotSent() {
        ExecInit init = Command.of("ls").toInit("sb");
        assertThat(init.hasWorkdir()).isFalse();
        assertThat(init.hasTimeoutSecs()).isFalse();
        assertThat(init.hasPtyInfo()).isFalse();
        assertThat(init.getEnvMap()).isEmpty();
    }

    @Test
    void timeoutIsRoundedUpToWholeSeconds() {
        assertThat(Command.of("x").timeout(Duration.ofMillis(1)).toInit("s").getTimeoutSecs())
                .isEqualTo(1);
        assertThat(Command.of("x").timeout(Duration.ofMillis(1500)).toInit("s").getTimeoutSecs())
                .isEqualTo(2);
        assertThat(Command.of("x").timeout(Duration.ofSeconds(2)).toInit("s").getTimeoutSecs())
                .isEqualTo(2);
        assertThatThrownBy(() -> Command.of("x").timeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void execCollectsAtMost32MiBUnlessTheCommandSaysOtherwise() {
        assertThat(Command.of("x").outputLimit()).isEqualTo(32L * 1024 * 1024).isEqualTo(Command.DEFAULT_OUTPUT_LIMIT);
        Command generous = Command.of("x").outputLimit(1L << 30).workdir("/tmp").env("A", "1");
        assertThat(generous.outputLimit()).isEqualTo(1L << 30);
        assertThat(generous).isNotEqualTo(Command.of("x").workdir("/tmp").env("A", "1"));
        assertThatThrownBy(() -> Command.of("x").outputLimit(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("outputLimit must be at least 1 byte, got 0");
    }

    @Test
    void isImmutable() {
        Command base = Command.of("env");
        Command withEnv = base.env("A", "1");
        assertThat(base.env()).isEmpty();
        assertThat(withEnv.env()).containsExactly(Map.entry("A", "1"));
        assertThat(base.workdir("/tmp")).isNotEqualTo(base);
        assertThat(Command.shell("echo hi | wc -c").args()).containsExactly("-c", "echo hi | wc -c");
        assertThat(Command.of("ls", "-la")).isEqualTo(Command.of("ls", "-la")).hasToString("ls -la");
    }

    @Test
    void signalsHaveLinuxNumbers() {
        assertThat(Signal.TERM.number()).isEqualTo(15);
        assertThat(Signal.KILL.number()).isEqualTo(9);
        assertThat(Signal.WINCH.number()).isEqualTo(28);
        assertThat(Signal.fromNumber(10)).contains(Signal.USR1);
        assertThat(Signal.fromNumber(64)).isEmpty();
    }
}
