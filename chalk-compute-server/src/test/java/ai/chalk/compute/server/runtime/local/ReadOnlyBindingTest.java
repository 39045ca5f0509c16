package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Read-only bindings (a function's code) next to read-write ones, with bubblewrap and with util-linux's unshare. */
class ReadOnlyBindingTest {

    @TempDir
    Path state;

    @Test
    void bubblewrapBindsReadOnly(@TempDir Path host) throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.REQUIRED)) {
            assertThat(runtime.isolation().level()).isEqualTo("bubblewrap");
            check(runtime, host);
        }
    }

    @Test
    void unshareBindsReadOnly(@TempDir Path host, @TempDir Path tools) throws Exception {
        try (LocalRuntime runtime =
                new LocalRuntime(state, LocalIsolation.AUTO, LocalTesting.pathWithout(tools, "bwrap"))) {
            assertThat(runtime.isolation().level()).isEqualTo("unshare");
            check(runtime, host);
        }
    }

    private static void check(LocalRuntime runtime, Path host) throws Exception {
        Path code = Files.createDirectories(host.resolve("code"));
        Files.writeString(code.resolve("App.class"), "bytes");
        Path run = Files.createDirectories(host.resolve("run"));
        RuntimeSandbox sb = runtime.start(new SandboxSpec(
                LocalTesting.newId(),
                "",
                Map.of(),
                "/chalk/run",
                SandboxSpec.ResourceLimits.NONE,
                false,
                List.of(),
                List.of(
                        new SandboxSpec.VolumeBinding(code, "/chalk/code", true),
                        new SandboxSpec.VolumeBinding(run, "/chalk/run", false))));
        try {
            assertThat(sh(sb, "cat /chalk/code/App.class").ok().out()).isEqualTo("bytes");
            assertThat(sh(sb, "touch /chalk/code/x 2>&1 || echo refused").out()).contains("refused");
            assertThat(sh(sb, "mount -o remount,rw /chalk/code 2>&1 || echo refused")
                            .out())
                    .contains("refused");
            sh(sb, "echo written > /chalk/run/out").ok();
            assertThat(Files.readString(run.resolve("out"))).isEqualTo("written\n");
            assertThat(Files.exists(code.resolve("x"))).isFalse();
        } finally {
            sb.terminate(Duration.ofSeconds(1));
        }
    }
}
