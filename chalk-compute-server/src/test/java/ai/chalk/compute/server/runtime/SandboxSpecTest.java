package ai.chalk.compute.server.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.SandboxSpec.VolumeBinding;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The invariants every runtime relies on without checking them again. */
class SandboxSpecTest {

    private static SandboxSpec spec(String id, String workdir, Map<String, String> env, List<VolumeBinding> volumes) {
        return new SandboxSpec(id, " busybox ", env, workdir, ResourceLimits.NONE, false, List.of(), volumes);
    }

    @Test
    void showsVariableNamesButNeverTheirValues() {
        SandboxSpec s = spec("sb-1", "/", Map.of("API_KEY", "sk-secret-value"), List.of());
        assertThat(s.toString()).contains("API_KEY").doesNotContain("sk-secret-value");
        ProcessSpec p = new ProcessSpec(
                "env", List.of(), java.util.Optional.empty(), Map.of("T", "tok-123"), java.util.Optional.empty());
        assertThat(p.toString()).contains("T").doesNotContain("tok-123");
    }

    @Test
    void normalizesWhatRuntimesRead() {
        SandboxSpec s = spec(
                "sb-1",
                "/work/./a/../b/",
                Map.of("A", "1"),
                List.of(new VolumeBinding(Path.of("/v"), "/data/./cache/")));
        assertThat(s.workdir()).isEqualTo("/work/b");
        assertThat(s.image()).isEqualTo("busybox");
        assertThat(s.volumes().get(0).mountPath()).isEqualTo("/data/cache");
        assertThat(spec("sb-2", " ", Map.of(), List.of()).workdir()).isEqualTo("/");
        assertThatThrownBy(() -> s.env().put("B", "2")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void refusesWhatNoRuntimeCouldStart() {
        assertThatThrownBy(() -> spec("../x", "/", Map.of(), List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid sandbox id");
        assertThatThrownBy(() -> spec("x".repeat(129), "/", Map.of(), List.of()))
                .hasMessageContaining("invalid sandbox id");
        assertThatThrownBy(() -> spec("sb", "work", Map.of(), List.of()))
                .hasMessageContaining("workdir must be an absolute path: work");
        assertThatThrownBy(() -> spec("sb", "/", Map.of("A=B", "1"), List.of()))
                .hasMessageContaining("invalid environment variable name");
        assertThatThrownBy(() -> spec("sb", "/", Map.of("A", "x\0y"), List.of()))
                .hasMessageContaining("invalid value for environment variable A");
        assertThatThrownBy(() -> new VolumeBinding(Path.of("/v"), "data"))
                .hasMessageContaining("mount path must be an absolute path");
        assertThatThrownBy(() -> new VolumeBinding(Path.of("/v"), "/data/.."))
                .hasMessageContaining("cannot be mounted at /");
        assertThatThrownBy(() -> spec(
                        "sb",
                        "/",
                        Map.of(),
                        List.of(new VolumeBinding(Path.of("/a"), "/data"), new VolumeBinding(Path.of("/b"), "/data/"))))
                .hasMessageContaining("two volumes are mounted at /data");
    }
}
