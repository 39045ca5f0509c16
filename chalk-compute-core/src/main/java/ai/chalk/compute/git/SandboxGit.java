package ai.chalk.compute.git;

import static ai.chalk.compute.git.GitArguments.requireName;
import static ai.chalk.compute.git.GitArguments.requirePath;
import static ai.chalk.compute.git.GitArguments.requireTimeout;
import static ai.chalk.compute.git.GitArguments.withFiles;

import ai.chalk.compute.sandbox.spi.CommandOutcome;
import ai.chalk.compute.sandbox.spi.ExecTarget;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Git inside a sandbox: clone, inspect and change repositories with the sandbox's own {@code git}.
 * Get it from {@link ai.chalk.compute.sandbox.Sandbox#git()}.
 *
 * <pre>{@code
 * SandboxGit git = sandbox.git();
 * git.clone("https://github.com/octocat/Hello-World.git", "repo");   // default branch, depth 1
 * System.out.println(git.status("repo").currentBranch().orElseThrow());
 * System.out.println(git.branches("repo"));
 *
 * git.configureUser("repo", "Agent", "agent@example.com");
 * git.createBranch("repo", "fix");
 * git.checkoutBranch("repo", "fix");
 * // ... change files with sandbox.files() or exec ...
 * git.add("repo", ".");
 * git.commit("repo", "Fix the bug");
 * git.withCredentials("x-access-token", token).push("repo", "origin", "fix", true);
 * }</pre>
 *
 * <p>Every helper runs {@code git} through exec, so it works against any Chalk Compute server; the
 * sandbox's image needs git (the default image has it). Repository paths are relative to the
 * sandbox's working directory, or absolute. Arguments are passed to git as they are, never through a
 * shell.
 *
 * <p><b>Credentials.</b> HTTPS credentials given with {@link #withCredentials(String, String)} or
 * {@link CloneOptions#credentials(String, String)} are used by the network commands (clone, fetch,
 * pull, push) and scoped to the one command: git receives them from a credential helper set on its
 * command line that reads two environment variables of that command, so they appear neither in the
 * command line, nor in the remote URL, nor in the repository's configuration, and any credential
 * helper configured in the sandbox is bypassed for that command so nothing stores them. SSH remotes
 * use the sandbox's SSH configuration. Commands never prompt: a remote that needs credentials that
 * were not given fails.
 *
 * <p><b>Timeouts.</b> {@link #withTimeout(Duration)} limits every git command a helper runs
 * (helpers that run several commands apply it to each).
 *
 * <p><b>Failures.</b> A git command that fails throws {@link GitException} with the command, its exit
 * code and its output, passwords masked. Config changes ({@link #setConfig}, {@link #configureUser})
 * apply only to the one repository. Pulls only fast-forward. Deleting a branch that is not merged
 * needs {@code force}.
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class SandboxGit {

    private final ExecTarget sandbox;
    private final GitRunner git;
    private final Duration timeout; // null: none
    private final GitCredentials credentials; // null: none

    private SandboxGit(ExecTarget sandbox, Duration timeout, GitCredentials credentials) {
        this.sandbox = Objects.requireNonNull(sandbox, "sandbox");
        this.git = new GitRunner(sandbox);
        this.timeout = timeout;
        this.credentials = credentials;
    }

    /**
     * The git helpers of a sandbox, as {@link ai.chalk.compute.sandbox.Sandbox#git()} gives them (the way to get them).
     *
     * @param sandbox where git runs: a started sandbox
     * @return the helpers, without timeout or credentials
     */
    public static SandboxGit of(ExecTarget sandbox) {
        return new SandboxGit(sandbox, null, null);
    }

    /**
     * These helpers with a time limit on each git command: one that runs longer is killed and the
     * helper throws a {@link GitException} whose {@link GitException#timedOut()} is true.
     *
     * @param timeout a positive duration, rounded up to whole seconds
     * @return new helpers for the same sandbox, with the same credentials
     */
    public SandboxGit withTimeout(Duration timeout) {
        return new SandboxGit(sandbox, requireTimeout(timeout), credentials);
    }

    /**
     * These helpers with HTTPS credentials for the network commands (clone, fetch, pull, push). The
     * credentials are passed to each of those commands only and never saved (see the class
     * description).
     *
     * @param username the user name
     * @param password the password or token
     * @return new helpers for the same sandbox, with the same timeout
     */
    public SandboxGit withCredentials(String username, String password) {
        return new SandboxGit(sandbox, timeout, new GitCredentials(username, password));
    }

    // ---- repositories ----

    /**
     * Clones a repository's default branch with a history depth of 1.
     *
     * @param url  the remote repository
     * @param path the directory to create
     * @throws GitException when the clone fails
     */
    public void clone(String url, String path) {
        clone(CloneOptions.of(url, path));
    }

    /**
     * Clones a repository: a branch, a commit, or a history depth (see {@link CloneOptions}). When a
     * commit is asked for, the clone is made without checkout, the commit is fetched if the clone
     * does not contain it, and it is checked out detached; if any of these steps fails, the new
     * directory is removed.
     *
     * @param options what to clone, where and how
     * @throws GitException when the clone fails
     */
    public void clone(CloneOptions options) {
        Objects.requireNonNull(options, "options");
        GitCredentials auth = options.credentialsOrNull() != null ? options.credentialsOrNull() : credentials;
        new GitClone(git).clone(options, auth, options.timeout().orElse(timeout));
    }

    /**
     * Creates an empty repository (or reinitializes an existing one), with git's default initial
     * branch.
     *
     * @param path the directory; created if missing
     * @throws GitException when git fails
     */
    public void init(String path) {
        git.run(null, List.of("init", "-q", "--", requirePath(path)), null, timeout);
    }

    /**
     * Creates an empty repository whose first branch has the given name.
     *
     * @param path          the directory; created if missing
     * @param initialBranch the name of the first branch, for example {@code main}
     * @throws GitException when git fails
     */
    public void init(String path, String initialBranch) {
        git.run(
                null,
                List.of(
                        "init",
                        "-q",
                        "--initial-branch=" + requireName("initialBranch", initialBranch),
                        "--",
                        requirePath(path)),
                null,
                timeout);
    }

    /**
     * The state of the working tree: current branch, how far it is ahead of or behind its upstream,
     * and the staged, unstaged, untracked and conflicted files (every untracked file is listed, also
     * inside untracked directories).
     *
     * @param path the repository
     * @return its status
     * @throws GitException when the path is not a repository
     */
    public GitStatus status(String path) {
        CommandOutcome result = git.run(
                path, List.of("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"), null, timeout);
        return GitOutput.status(result.stdoutText());
    }

    // ---- branches ----

    /**
     * The local branches, sorted by name; the checked-out one has {@link GitBranch#current()} set.
     *
     * @param path the repository
     * @return its branches (none in a repository without commits)
     * @throws GitException when the path is not a repository
     */
    public List<GitBranch> branches(String path) {
        return listBranches(path, "refs/heads/");
    }

    /**
     * The remote-tracking branches, such as {@code origin/main}, sorted by name.
     *
     * @param path the repository
     * @return its remote-tracking branches
     * @throws GitException when the path is not a repository
     */
    public List<GitBranch> remoteBranches(String path) {
        return listBranches(path, "refs/remotes/");
    }

    private List<GitBranch> listBranches(String path, String prefix) {
        CommandOutcome result = git.run(path, List.of("for-each-ref", GitOutput.BRANCH_FORMAT, prefix), null, timeout);
        return GitOutput.branches(result.stdout(), prefix);
    }

    /**
     * Creates a branch at the current commit, without checking it out.
     *
     * @param path the repository
     * @param name the new branch's name
     * @throws GitException when the branch exists or the name is not valid
     */
    public void createBranch(String path, String name) {
        git.run(path, List.of("branch", requireName("name", name)), null, timeout);
    }

    /**
     * Creates a branch at a commit, without checking it out.
     *
     * @param path       the repository
     * @param name       the new branch's name
     * @param startPoint where it starts: a commit, branch or tag
     * @throws GitException when the branch exists, the name is not valid or the start point is unknown
     */
    public void createBranch(String path, String name, String startPoint) {
        git.run(
                path,
                List.of("branch", requireName("name", name), requireName("startPoint", startPoint)),
                null,
                timeout);
    }

    /**
     * Checks out a branch. When only a remote has a branch of that name (for example
     * {@code origin/feature}), a local branch tracking it is created.
     *
     * @param path the repository
     * @param name the branch
     * @throws GitException when there is no such branch, or local changes would be overwritten
     */
    public void checkoutBranch(String path, String name) {
        git.run(path, List.of("switch", "-q", requireName("name", name)), null, timeout);
    }

    /**
     * Deletes a branch that is merged into its upstream (or {@code HEAD}).
     *
     * @param path the repository
     * @param name the branch
     * @throws GitException when it is not fully merged, is checked out, or does not exist
     */
    public void deleteBranch(String path, String name) {
        deleteBranch(path, name, false);
    }

    /**
     * Deletes a branch; an unmerged branch (with commits found nowhere else) needs {@code force}.
     *
     * @param path  the repository
     * @param name  the branch
     * @param force whether to delete it even when it is not merged
     * @throws GitException when it is not merged and {@code force} is false, is checked out, or does not exist
     */
    public void deleteBranch(String path, String name, boolean force) {
        git.run(path, List.of("branch", force ? "-D" : "-d", requireName("name", name)), null, timeout);
    }

    // ---- remotes: fetch, pull, push ----

    /**
     * Fetches from the current branch's remote (or {@code origin}).
     *
     * @param path the repository
     * @throws GitException when the fetch fails
     */
    public void fetch(String path) {
        git.run(path, List.of("fetch", "-q"), credentials, timeout);
    }

    /**
     * Fetches from a remote.
     *
     * @param path   the repository
     * @param remote the remote's name, for example {@code origin}
     * @throws GitException when the fetch fails
     */
    public void fetch(String path, String remote) {
        git.run(path, List.of("fetch", "-q", requireName("remote", remote)), credentials, timeout);
    }

    /**
     * Fetches the current branch's upstream and fast-forwards to it. Fails, changing nothing, when the
     * branches have diverged: pulls never merge or rebase.
     *
     * @param path the repository
     * @throws GitException when the branch cannot be fast-forwarded or the fetch fails
     */
    public void pull(String path) {
        git.run(path, List.of("pull", "-q", "--ff-only", "--no-rebase"), credentials, timeout);
    }

    /**
     * Fetches a branch of a remote and fast-forwards the current branch to it; fails, changing
     * nothing, when they have diverged.
     *
     * @param path   the repository
     * @param remote the remote's name
     * @param branch the remote branch
     * @throws GitException when the branch cannot be fast-forwarded or the fetch fails
     */
    public void pull(String path, String remote, String branch) {
        git.run(
                path,
                List.of(
                        "pull",
                        "-q",
                        "--ff-only",
                        "--no-rebase",
                        requireName("remote", remote),
                        requireName("branch", branch)),
                credentials,
                timeout);
    }

    /**
     * Pushes the current branch to its upstream.
     *
     * @param path the repository
     * @throws GitException when the push is rejected or the branch has no upstream
     */
    public void push(String path) {
        git.run(path, List.of("push", "-q"), credentials, timeout);
    }

    /**
     * Pushes a branch to a remote.
     *
     * @param path   the repository
     * @param remote the remote's name
     * @param branch the local branch, pushed to the remote branch of the same name (or a refspec
     *               such as {@code HEAD:refs/heads/main})
     * @throws GitException when the push is rejected
     */
    public void push(String path, String remote, String branch) {
        push(path, remote, branch, false);
    }

    /**
     * Pushes a branch to a remote and optionally makes the remote branch its upstream, so that
     * {@link #status} reports ahead/behind and {@link #pull(String)} and {@link #push(String)} know
     * where to go.
     *
     * @param path        the repository
     * @param remote      the remote's name
     * @param branch      the local branch
     * @param setUpstream whether the local branch should track the pushed one
     * @throws GitException when the push is rejected
     */
    public void push(String path, String remote, String branch, boolean setUpstream) {
        List<String> args = new ArrayList<>(List.of("push", "-q"));
        if (setUpstream) {
            args.add("--set-upstream");
        }
        args.add(requireName("remote", remote));
        args.add(requireName("branch", branch));
        git.run(path, args, credentials, timeout);
    }

    /**
     * Adds a remote.
     *
     * @param path the repository
     * @param name the remote's name
     * @param url  its URL; put credentials in {@link #withCredentials}, not in the URL, or they are
     *             saved in the repository's configuration
     * @throws GitException when a remote of that name exists
     */
    public void remoteAdd(String path, String name, String url) {
        git.run(path, List.of("remote", "add", requireName("name", name), requireName("url", url)), null, timeout);
    }

    /**
     * The URL of a remote.
     *
     * @param path the repository
     * @param name the remote's name
     * @return its (fetch) URL
     * @throws GitException when there is no such remote
     */
    public String remoteGet(String path, String name) {
        return GitOutput.line(git.run(path, List.of("remote", "get-url", requireName("name", name)), null, timeout)
                .stdoutText());
    }

    /**
     * The repository's remotes and their URLs, in the order they are configured.
     *
     * @param path the repository
     * @return remote names to URLs (empty when there are none)
     * @throws GitException when the path is not a repository
     */
    public Map<String, String> remotes(String path) {
        List<String> args = List.of("config", "-z", "--get-regexp", "^remote\\..*\\.url$");
        return git.lookUpConfig(path, args, timeout)
                .map(result -> GitOutput.remotes(result.stdoutText()))
                .orElse(Map.of()); // no remote configured
    }

    // ---- changing the working tree ----

    /**
     * Stages files for the next commit.
     *
     * @param path  the repository
     * @param files paths relative to the repository root; {@code .} for everything
     * @throws GitException when a path matches no file
     */
    public void add(String path, String... files) {
        git.run(path, withFiles(List.of("add"), files), null, timeout);
    }

    /**
     * Commits what is staged.
     *
     * @param path    the repository
     * @param message the commit message
     * @return the new commit's id
     * @throws GitException when nothing is staged or no user is configured (see {@link #configureUser})
     */
    public String commit(String path, String message) {
        Objects.requireNonNull(message, "message");
        git.run(path, List.of("commit", "-q", "-m", message), null, timeout);
        return git.run(path, List.of("rev-parse", "HEAD"), null, timeout)
                .stdoutText()
                .strip();
    }

    /**
     * Unstages everything: resets the index to {@code HEAD}, keeping the changes in the working tree.
     *
     * @param path the repository
     * @throws GitException when git fails
     */
    public void reset(String path) {
        git.run(path, List.of("reset", "-q"), null, timeout);
    }

    /**
     * Moves the current branch to a commit.
     *
     * @param path   the repository
     * @param mode   what happens to the index and working tree
     * @param target the commit, for example {@code HEAD~1} or {@code origin/main}
     * @throws GitException when the target is unknown
     */
    public void reset(String path, ResetMode mode, String target) {
        Objects.requireNonNull(mode, "mode");
        git.run(path, List.of("reset", "-q", mode.flag(), requireName("target", target)), null, timeout);
    }

    /**
     * Discards unstaged changes to files: restores them in the working tree from the index.
     *
     * @param path  the repository
     * @param files paths relative to the repository root; {@code .} for everything
     * @throws GitException when a path is not tracked
     */
    public void restore(String path, String... files) {
        restore(path, RestoreOptions.files(files));
    }

    /**
     * Restores files in the working tree, the index (unstages them), or both, from the index, {@code HEAD}
     * or a given commit.
     *
     * @param path    the repository
     * @param options which files, where to and from what
     * @throws GitException when a path is not tracked or the source is unknown
     */
    public void restore(String path, RestoreOptions options) {
        git.run(path, Objects.requireNonNull(options, "options").arguments(), null, timeout);
    }

    // ---- configuration ----

    /**
     * A configuration value as git sees it in the repository (its own configuration, then the
     * sandbox user's and the system's).
     *
     * @param path the repository
     * @param key  the key, for example {@code user.name}
     * @return its value; empty when it is not set
     * @throws GitException when the key is not valid or the path is not a repository
     */
    public Optional<String> getConfig(String path, String key) {
        List<String> args = List.of("config", "-z", "--get", requireName("key", key));
        return git.lookUpConfig(path, args, timeout).map(result -> GitOutput.configValue(result.stdoutText()));
    }

    /**
     * Sets a configuration value in the repository's own configuration ({@code .git/config}); the
     * sandbox user's and system configuration are not changed.
     *
     * @param path  the repository
     * @param key   the key, for example {@code pull.rebase}
     * @param value its value
     * @throws GitException when the key is not valid or the path is not a repository
     */
    public void setConfig(String path, String key, String value) {
        Objects.requireNonNull(value, "value");
        git.run(path, List.of("config", "--local", "--", requireName("key", key), value), null, timeout);
    }

    /**
     * Sets the author and committer identity for the repository's commits ({@code user.name} and
     * {@code user.email} in its own configuration).
     *
     * @param path  the repository
     * @param name  the user's name
     * @param email the user's email address
     * @throws GitException when the path is not a repository
     */
    public void configureUser(String path, String name, String email) {
        setConfig(path, "user.name", Objects.requireNonNull(name, "name"));
        setConfig(path, "user.email", Objects.requireNonNull(email, "email"));
    }

    @Override
    public String toString() {
        return "SandboxGit[" + sandbox + (timeout == null ? "" : ", timeout=" + timeout)
                + (credentials == null ? "" : ", credentials=" + credentials) + "]";
    }
}
