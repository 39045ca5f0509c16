package ai.chalk.compute.code;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code eval} variant: a local Jupyter server and kernel as plain processes of this machine. The behaviours every
 * variant has, plus what is this variant's own: the files are this machine's, under the working directory.
 */
class EvalCodeSandboxTest extends CodeSandboxBehaviourTest {

    @Override
    CodeSandbox create(SandboxConfig config) {
        return CodeSandbox.create(Variant.EVAL, config);
    }

    @Test
    void filesAndCommandsAreThisMachinesInTheWorkingDirectoryWithTheEnvironment(@TempDir Path dir) throws Exception {
        try (CodeSandbox local = CodeSandbox.create(
                Variant.EVAL,
                SandboxConfig.builder()
                        .workingDir(dir.toString())
                        .env("GREETING", "hello")
                        .build())) {
            local.files().writeText("a/b.txt", "local");
            assertThat(Files.readString(dir.resolve("a/b.txt"))).isEqualTo("local");
            assertThat(local.runCode("import os\nos.getcwd()").text()).isEqualTo("'" + dir + "'");
            assertThat(local.runCode("os.environ['GREETING']").text()).isEqualTo("'hello'");
            assertThat(local.commands().run("echo $GREETING; pwd").stdoutText()).isEqualTo("hello\n" + dir + "\n");
            assertThat(local.variant()).isEqualTo(Variant.EVAL);
            assertThat(local.id()).startsWith("eval-");
        }
        // a working directory the caller gave is the caller's: it stays
        assertThat(dir.resolve("a/b.txt")).exists();
    }

    @Test
    void aTemporaryWorkingDirectoryGoesWithTheSandbox() {
        CodeSandbox own = CodeSandbox.create(Variant.EVAL, SandboxConfig.defaults());
        String cwd = own.runCode("import os\nos.getcwd()").text();
        Path dir = Path.of(cwd.substring(1, cwd.length() - 1));
        assertThat(dir).isDirectory();
        own.close();
        assertThat(dir).doesNotExist();
        assertThatThrownBy(() -> own.runCode("1")).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void javaSnippetsAndAChalkSandboxAreRefusedSayingWhere() {
        assertThatThrownBy(() -> CodeSandbox.create(
                        Variant.EVAL,
                        SandboxConfig.builder().language(Language.JAVA).build()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("chalk sandbox");
        assertThatThrownBy(() -> sandbox.sandbox())
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("work on every variant");
    }
}
