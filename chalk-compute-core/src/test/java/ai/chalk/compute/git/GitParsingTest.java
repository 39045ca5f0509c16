package ai.chalk.compute.git;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/** Parsing of git's machine-readable output and masking of secrets, without a sandbox. */
class GitParsingTest {

    @Test
    void porcelainV2StatusWithEveryKindOfRecord() {
        String output = String.join(
                "\0",
                "# branch.oid 1111111111111111111111111111111111111111",
                "# branch.head feature/x",
                "# branch.upstream origin/feature/x",
                "# branch.ab +3 -2",
                "1 M. N... 100644 100644 100644 aaaa bbbb staged only.txt",
                "1 .M N... 100644 100644 100644 aaaa aaaa worktree only.txt",
                "1 MD N... 100644 100644 000000 aaaa bbbb both.txt",
                "1 A. N... 000000 100644 100644 0000 cccc new file.txt",
                "2 R. N... 100644 100644 100644 aaaa aaaa R100 renamed to.txt",
                "renamed from.txt",
                "u UU N... 100644 100644 100644 100644 aaaa bbbb cccc conflict ed.txt",
                "? untracked dir/with space.txt",
                "! ignored.log",
                "");
        GitStatus status = GitOutput.status(output);
        assertThat(status.currentBranch()).contains("feature/x");
        assertThat(status.detached()).isFalse();
        assertThat(status.headCommit()).contains("1111111111111111111111111111111111111111");
        assertThat(status.upstream()).contains("origin/feature/x");
        assertThat(status.ahead()).isEqualTo(OptionalInt.of(3));
        assertThat(status.behind()).isEqualTo(OptionalInt.of(2));
        assertThat(status.staged())
                .containsExactly(
                        new GitFileChange("staged only.txt", GitFileChange.Kind.MODIFIED, Optional.empty()),
                        new GitFileChange("both.txt", GitFileChange.Kind.MODIFIED, Optional.empty()),
                        new GitFileChange("new file.txt", GitFileChange.Kind.ADDED, Optional.empty()),
                        new GitFileChange(
                                "renamed to.txt", GitFileChange.Kind.RENAMED, Optional.of("renamed from.txt")));
        assertThat(status.unstaged())
                .containsExactly(
                        new GitFileChange("worktree only.txt", GitFileChange.Kind.MODIFIED, Optional.empty()),
                        new GitFileChange("both.txt", GitFileChange.Kind.DELETED, Optional.empty()));
        assertThat(status.conflicted()).containsExactly("conflict ed.txt");
        assertThat(status.untracked()).containsExactly("untracked dir/with space.txt");
        assertThat(status.isClean()).isFalse();
    }

    @Test
    void detachedAndUnbornHeads() {
        GitStatus detached = GitOutput.status("# branch.oid 2222\0# branch.head (detached)\0");
        assertThat(detached.detached()).isTrue();
        assertThat(detached.currentBranch()).isEmpty();
        assertThat(detached.headCommit()).contains("2222");
        assertThat(detached.ahead()).isEmpty();
        assertThat(detached.isClean()).isTrue();

        GitStatus unborn = GitOutput.status("# branch.oid (initial)\0# branch.head main\0");
        assertThat(unborn.currentBranch()).contains("main");
        assertThat(unborn.headCommit()).isEmpty();
    }

    @Test
    void passwordsInUrlsAreMasked() {
        assertThat(SecretMask.maskUrls("fatal: unable to access 'https://user:hunter2@example.com/r.git/': x"))
                .isEqualTo("fatal: unable to access 'https://user:****@example.com/r.git/': x");
        assertThat(SecretMask.maskUrls("https://user@example.com/r.git")).isEqualTo("https://user@example.com/r.git");
        assertThat(SecretMask.maskUrls("git@github.com:org/repo.git")).isEqualTo("git@github.com:org/repo.git");
        assertThat(CloneOptions.of("https://u:pw@example.com/r.git", "r")
                        .credentials("me", "secret")
                        .toString())
                .doesNotContain("pw@")
                .doesNotContain("secret")
                .contains("me:****");
    }
}
