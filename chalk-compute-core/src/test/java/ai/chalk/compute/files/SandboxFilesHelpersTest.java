package ai.chalk.compute.files;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The path handling and output parsing of the files API, without a sandbox. */
class SandboxFilesHelpersTest {

    @Test
    void relativePathsCannotBeTakenForOptions() {
        assertThat(FilePaths.arg("-rf")).isEqualTo("./-rf");
        assertThat(FilePaths.arg("!")).isEqualTo("./!");
        assertThat(FilePaths.arg("dir/file")).isEqualTo("./dir/file");
        assertThat(FilePaths.arg("/abs/-x")).isEqualTo("/abs/-x");
    }

    @Test
    void parentsAndNames() {
        assertThat(FilePaths.parent("./x")).isEqualTo(".");
        assertThat(FilePaths.parent("/x")).isEqualTo("/");
        assertThat(FilePaths.parent("/a/b/c/")).isEqualTo("/a/b");
        assertThat(FilePaths.parent("/")).isEqualTo("/");
        assertThat(FilePaths.baseName("/a/b/")).isEqualTo("b");
        assertThat(FilePaths.baseName("/")).isEqualTo("/");
        assertThat(FilePaths.baseName("name")).isEqualTo("name");
    }

    @Test
    void findTimestampsKeepNanoseconds() {
        assertThat(FindOutput.parseTime("1733030000.1234567890"))
                .isEqualTo(Instant.ofEpochSecond(1733030000L, 123456789));
        assertThat(FindOutput.parseTime("1733030000.0000000000")).isEqualTo(Instant.ofEpochSecond(1733030000L));
        assertThat(FindOutput.parseTime("-1.5000000000")).isEqualTo(Instant.ofEpochSecond(-2, 500_000_000));
    }

    @Test
    void messagesShowControlCharactersEscaped() {
        assertThat(FilePaths.quote("a\nb\t'c'")).isEqualTo("'a\\nb\\t\\'c\\''");
        SandboxFileException e =
                FileFailures.failure("read", "new\nline", 1, "cat: './new\nline': No such file or directory\n");
        assertThat(e)
                .isInstanceOf(FileNotFoundInSandboxException.class)
                .hasMessage("NOT_FOUND: cannot read 'new\\nline': no such file or directory");
        assertThat(e.path()).isEqualTo("new\nline");
    }

    @Test
    void failuresAreClassifiedByTheSystemsErrorText() {
        assertThat(FileFailures.failure("write", "/usr/x", 2, "sh: 1: cannot create /usr/x: Read-only file system"))
                .isInstanceOf(FileAccessDeniedException.class)
                .hasMessageEndingWith("read-only file system");
        assertThat(FileFailures.failure("remove", "/d", 1, "rmdir: failed to remove '/d': Directory not empty"))
                .isExactlyInstanceOf(SandboxFileException.class)
                .hasMessageEndingWith("the directory is not empty");
        assertThat(FileFailures.failure("write", "/f", 1, "cat: write error: No space left on device"))
                .hasMessageEndingWith("no space left on device");
        assertThat(FileFailures.failure("list", "/d", 127, "sh: 1: find: not found"))
                .hasMessageContaining("lacks a tool");
        assertThat(FileFailures.failure("read", "/f", 3, "something odd"))
                .hasMessageEndingWith("failed with exit code 3: something odd");
    }
}
