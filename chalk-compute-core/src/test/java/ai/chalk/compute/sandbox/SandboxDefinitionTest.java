package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.image.Image;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SandboxDefinitionTest {

    @Test
    void aDefinitionIsImmutableAndItsBuilderCanGoOnToMakeOthers() {
        SandboxDefinition.Builder builder =
                Sandbox.builder().image("ubuntu:latest").tag("team", "search");
        SandboxDefinition first = builder.build();
        SandboxDefinition second = builder.name("second").tag("stage", "dev").build();
        assertThat(first.name()).isEmpty();
        assertThat(first.tags()).containsExactly(Map.entry("team", "search"));
        assertThat(second.name()).contains("second");
        assertThat(second.tags()).containsOnlyKeys("team", "stage");
        assertThat(first.image()).contains("ubuntu:latest");
        assertThatThrownBy(() -> first.tags().put("x", "y")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void definitionBecomesTheCreateRequest() {
        CreateSandboxRequest request = Sandbox.builder()
                .image("ubuntu:latest")
                .cpu("2")
                .memory("4Gi")
                .env(Map.of("DEBIAN_FRONTEND", "noninteractive"))
                .env("A", "1")
                .name("agent")
                .entrypoint(List.of("sleep", "infinity"))
                .build()
                .toCreateRequest();
        assertThat(request.getImage()).isEqualTo("ubuntu:latest");
        assertThat(request.getResourceLimits().getCpu()).isEqualTo("2");
        assertThat(request.getResourceLimits().getMemory()).isEqualTo("4Gi");
        assertThat(request.getEnvMap())
                .containsOnly(Map.entry("DEBIAN_FRONTEND", "noninteractive"), Map.entry("A", "1"));
        assertThat(request.getName()).isEqualTo("agent");
        assertThat(request.getEntrypointList()).containsExactly("sleep", "infinity");
    }

    @Test
    void declarativeImageIsSentAsImageSpecAndNoImageLeavesTheChoiceToTheServer() {
        Image image = Image.debianSlim().pipInstall("pandas");
        CreateSandboxRequest withSpec = Sandbox.builder().image(image).build().toCreateRequest();
        assertThat(withSpec.getImageSpec()).isEqualTo(image.toSpec());
        CreateSandboxRequest bare = Sandbox.builder().build().toCreateRequest();
        assertThat(bare.getImageSourceCase()).isEqualTo(CreateSandboxRequest.ImageSourceCase.IMAGESOURCE_NOT_SET);
        assertThat(bare.hasResourceLimits()).isFalse();
        assertThat(bare.hasName()).isFalse();
    }

    @Test
    void parsesTheServersCreationTime() {
        Instant t = Instant.parse("2025-03-04T05:06:07.123Z");
        assertThat(SandboxInfo.parseTime("2025-03-04T05:06:07.123Z")).isEqualTo(t);
        assertThat(SandboxInfo.parseTime("2025-03-04T06:06:07.123+01:00")).isEqualTo(t);
        assertThat(SandboxInfo.parseTime("2025-03-04 05:06:07.123+00:00")).isEqualTo(t);
        assertThat(SandboxInfo.parseTime("2025-03-04T05:06:07.123")).isEqualTo(t);
        assertThat(SandboxInfo.parseTime("")).isNull();
        assertThat(SandboxInfo.parseTime("yesterday")).isNull();
    }
}
