package ai.chalk.compute.git;

import java.util.Objects;
import java.util.Optional;

/**
 * A branch of a repository, as {@link SandboxGit#branches(String)} and
 * {@link SandboxGit#remoteBranches(String)} report it.
 *
 * @param name     the branch's name: {@code main} for a local branch, {@code origin/main} for a
 *                 remote-tracking one
 * @param current  whether it is checked out
 * @param commit   the id of the commit it points to
 * @param upstream the branch it tracks, for example {@code origin/main}, for a local branch that has one
 */
public record GitBranch(String name, boolean current, String commit, Optional<String> upstream) {

    /** Checks that no component is {@code null}. */
    public GitBranch {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(commit, "commit");
        Objects.requireNonNull(upstream, "upstream");
    }
}
