package ai.chalk.compute.git;

import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The state of a repository's working tree, as {@link SandboxGit#status(String)} reports it.
 *
 * <pre>{@code
 * GitStatus status = sandbox.git().status("repo");
 * System.out.println(status.currentBranch().orElse("(detached)") + " ahead " + status.ahead().orElse(0));
 * status.unstaged().forEach(change -> System.out.println(change.kind() + " " + change.path()));
 * }</pre>
 *
 * @param currentBranch the checked-out branch; empty when HEAD is detached
 * @param detached      whether HEAD is detached (a commit is checked out, not a branch)
 * @param headCommit    the id of the checked-out commit; empty in a repository without commits
 * @param upstream      the branch the current branch tracks, for example {@code origin/main}
 * @param ahead         commits on the current branch not on its upstream, when it tracks one that exists
 * @param behind        commits on its upstream not on the current branch, when it tracks one that exists
 * @param staged        changes in the index (what the next commit would contain)
 * @param unstaged      changes in the working tree to tracked files, not staged
 * @param untracked     paths of files git does not track (and does not ignore)
 * @param conflicted    paths with unresolved merge conflicts
 */
public record GitStatus(
        Optional<String> currentBranch,
        boolean detached,
        Optional<String> headCommit,
        Optional<String> upstream,
        OptionalInt ahead,
        OptionalInt behind,
        List<GitFileChange> staged,
        List<GitFileChange> unstaged,
        List<String> untracked,
        List<String> conflicted) {

    /** Checks that no component is {@code null} and makes the lists unmodifiable. */
    public GitStatus {
        Objects.requireNonNull(currentBranch, "currentBranch");
        Objects.requireNonNull(headCommit, "headCommit");
        Objects.requireNonNull(upstream, "upstream");
        Objects.requireNonNull(ahead, "ahead");
        Objects.requireNonNull(behind, "behind");
        staged = List.copyOf(staged);
        unstaged = List.copyOf(unstaged);
        untracked = List.copyOf(untracked);
        conflicted = List.copyOf(conflicted);
    }

    /** Whether nothing is staged, changed, untracked or conflicted. */
    public boolean isClean() {
        return staged.isEmpty() && unstaged.isEmpty() && untracked.isEmpty() && conflicted.isEmpty();
    }
}
