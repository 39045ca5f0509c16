package ai.chalk.compute.git;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.ExecTimeoutException;
import ai.chalk.compute.sandbox.Sandbox;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Git inside a sandbox: clone, inspect and change repositories with the sandbox's own {@code git}.
 * Get it from {@link Sandbox#git()}.
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

    /** The credential helper: prints the two variables, for {@code get} requests only. */
    private static final String CREDENTIAL_HELPER = "!f() { test \"$1\" = get || return 0; "
            + "printf 'username=%s\\npassword=%s\\n' \"$CHALK_GIT_USERNAME\" \"$CHALK_GIT_PASSWORD\"; }; f";
    private static final String USERNAME_VARIABLE = "CHALK_GIT_USERNAME";
    private static final String PASSWORD_VARIABLE = "CHALK_GIT_PASSWORD";
    /** The user-info part of URLs with a password: scheme://user:password@host. */
    private static final Pattern URL_PASSWORD = Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*://[^/\\s@:]*):([^/\\s@]*)@");

    private final Sandbox sandbox;
    private final Duration timeout;
    private final Credentials credentials;

    private SandboxGit(Sandbox sandbox, Duration timeout, Credentials credentials) {
        this.sandbox = Objects.requireNonNull(sandbox, "sandbox");
        this.timeout = timeout;
        this.credentials = credentials;
    }

    /**
     * The git helpers of a sandbox; the same as {@link Sandbox#git()}.
     *
     * @param sandbox a started sandbox
     * @return the helpers, without timeout or credentials
     */
    public static SandboxGit of(Sandbox sandbox) {
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
        return new SandboxGit(sandbox, timeout, new Credentials(username, password));
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
        Credentials auth = options.credentialsOrNull() != null ? options.credentialsOrNull() : credentials;
        Duration limit = options.timeout().orElse(timeout);
        List<String> args = new ArrayList<>(List.of("clone", "-q"));
        options.depth().ifPresent(d -> args.addAll(List.of("--depth", Integer.toString(d))));
        options.branch().ifPresent(b -> args.addAll(List.of("--branch", b)));
        if (options.commitId().isPresent()) {
            args.add("--no-checkout");
        }
        args.addAll(List.of("--", options.url(), options.path()));
        run(null, args, auth, limit);
        if (options.commitId().isEmpty()) {
            return;
        }
        String repo = options.path();
        String commit = options.commitId().get();
        try {
            checkoutCommit(repo, commit, options.depth(), auth, limit);
        } catch (GitException e) {
            sandbox.exec(Command.of("rm", "-rf", "--", options.path()));
            throw e;
        }
    }

    private void checkoutCommit(String repo, String commit, OptionalInt depth, Credentials auth, Duration limit) {
        List<String> checkout = List.of("checkout", "-q", "--detach", commit);
        if (tryRun(repo, List.of("cat-file", "-e", commit + "^{commit}"), null, limit)) {
            run(repo, checkout, null, limit);
            return;
        }
        // not in the clone: fetch it by id (servers allow this for reachable commits with protocol v2)
        List<String> fetch = new ArrayList<>(List.of("fetch", "-q"));
        depth.ifPresent(d -> fetch.addAll(List.of("--depth", Integer.toString(d))));
        fetch.addAll(List.of("origin", commit));
        if (tryRun(repo, fetch, auth, limit)) {
            run(repo, List.of("checkout", "-q", "--detach", "FETCH_HEAD"), null, limit);
            return;
        }
        // last resort: all of the remote's history, then the commit (an abbreviated id works here)
        List<String> fetchAll = new ArrayList<>(List.of("fetch", "-q"));
        ExecResult shallow = exec(repo, List.of("rev-parse", "--is-shallow-repository"), null, limit);
        if (shallow.success() && shallow.stdoutText().strip().equals("true")) {
            fetchAll.add("--unshallow");
        }
        fetchAll.addAll(List.of("origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"));
        run(repo, fetchAll, auth, limit);
        run(repo, checkout, null, limit);
    }

    /**
     * Creates an empty repository (or reinitializes an existing one), with git's default initial
     * branch.
     *
     * @param path the directory; created if missing
     * @throws GitException when git fails
     */
    public void init(String path) {
        run(null, List.of("init", "-q", "--", requirePath(path)), null, timeout);
    }

    /**
     * Creates an empty repository whose first branch has the given name.
     *
     * @param path          the directory; created if missing
     * @param initialBranch the name of the first branch, for example {@code main}
     * @throws GitException when git fails
     */
    public void init(String path, String initialBranch) {
        run(null, List.of("init", "-q", "--initial-branch=" + requireName("initialBranch", initialBranch), "--",
                requirePath(path)), null, timeout);
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
        ExecResult result = run(path, List.of("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"),
                null, timeout);
        return parseStatus(result.stdoutText());
    }

    static GitStatus parseStatus(String output) {
        String branch = null;
        String head = null;
        String upstream = null;
        OptionalInt ahead = OptionalInt.empty();
        OptionalInt behind = OptionalInt.empty();
        List<GitFileChange> staged = new ArrayList<>();
        List<GitFileChange> unstaged = new ArrayList<>();
        List<String> untracked = new ArrayList<>();
        List<String> conflicted = new ArrayList<>();
        String[] records = output.split("\0", -1);
        for (int i = 0; i < records.length; i++) {
            String record = records[i];
            if (record.isEmpty()) {
                continue;
            }
            if (record.startsWith("# branch.oid ")) {
                String oid = record.substring("# branch.oid ".length());
                head = oid.equals("(initial)") ? null : oid;
            } else if (record.startsWith("# branch.head ")) {
                branch = record.substring("# branch.head ".length());
            } else if (record.startsWith("# branch.upstream ")) {
                upstream = record.substring("# branch.upstream ".length());
            } else if (record.startsWith("# branch.ab ")) {
                String[] ab = record.substring("# branch.ab ".length()).split(" ");
                ahead = OptionalInt.of(Math.abs(Integer.parseInt(ab[0])));
                behind = OptionalInt.of(Math.abs(Integer.parseInt(ab[1])));
            } else if (record.startsWith("1 ")) {
                String[] f = record.split(" ", 9);
                addChanges(f[1], f[8], null, staged, unstaged);
            } else if (record.startsWith("2 ")) {
                String[] f = record.split(" ", 10);
                String original = i + 1 < records.length ? records[++i] : null;
                addChanges(f[1], f[9], original, staged, unstaged);
            } else if (record.startsWith("u ")) {
                conflicted.add(record.split(" ", 11)[10]);
            } else if (record.startsWith("? ")) {
                untracked.add(record.substring(2));
            }
            // "! " (ignored) and other headers are not reported
        }
        boolean detached = "(detached)".equals(branch);
        return new GitStatus(Optional.ofNullable(detached ? null : branch), detached, Optional.ofNullable(head),
                Optional.ofNullable(upstream), ahead, behind, staged, unstaged, untracked, conflicted);
    }

    private static void addChanges(String xy, String path, String original, List<GitFileChange> staged,
                                   List<GitFileChange> unstaged) {
        GitFileChange.Kind index = GitFileChange.Kind.fromStatusLetter(xy.charAt(0));
        GitFileChange.Kind worktree = GitFileChange.Kind.fromStatusLetter(xy.charAt(1));
        if (index != null) {
            staged.add(new GitFileChange(path, index, originalFor(index, original)));
        }
        if (worktree != null) {
            unstaged.add(new GitFileChange(path, worktree, originalFor(worktree, original)));
        }
    }

    private static Optional<String> originalFor(GitFileChange.Kind kind, String original) {
        boolean moved = kind == GitFileChange.Kind.RENAMED || kind == GitFileChange.Kind.COPIED;
        return moved ? Optional.ofNullable(original) : Optional.empty();
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
        ExecResult result = run(path, List.of("for-each-ref",
                "--format=%(refname)%00%(objectname)%00%(upstream:short)%00%(HEAD)%00%(symref)", prefix), null, timeout);
        List<GitBranch> branches = new ArrayList<>();
        for (String line : result.stdout()) {
            String[] f = line.split("\0", -1);
            if (f.length < 5 || !f[4].isEmpty()) {
                continue; // symbolic refs such as origin/HEAD are no branches
            }
            branches.add(new GitBranch(f[0].substring(prefix.length()), f[3].equals("*"), f[1],
                    f[2].isEmpty() ? Optional.empty() : Optional.of(f[2])));
        }
        return Collections.unmodifiableList(branches);
    }

    /**
     * Creates a branch at the current commit, without checking it out.
     *
     * @param path the repository
     * @param name the new branch's name
     * @throws GitException when the branch exists or the name is not valid
     */
    public void createBranch(String path, String name) {
        run(path, List.of("branch", requireName("name", name)), null, timeout);
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
        run(path, List.of("branch", requireName("name", name), requireName("startPoint", startPoint)), null, timeout);
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
        run(path, List.of("switch", "-q", requireName("name", name)), null, timeout);
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
        run(path, List.of("branch", force ? "-D" : "-d", requireName("name", name)), null, timeout);
    }

    // ---- remotes: fetch, pull, push ----

    /**
     * Fetches from the current branch's remote (or {@code origin}).
     *
     * @param path the repository
     * @throws GitException when the fetch fails
     */
    public void fetch(String path) {
        run(path, List.of("fetch", "-q"), credentials, timeout);
    }

    /**
     * Fetches from a remote.
     *
     * @param path   the repository
     * @param remote the remote's name, for example {@code origin}
     * @throws GitException when the fetch fails
     */
    public void fetch(String path, String remote) {
        run(path, List.of("fetch", "-q", requireName("remote", remote)), credentials, timeout);
    }

    /**
     * Fetches the current branch's upstream and fast-forwards to it. Fails, changing nothing, when the
     * branches have diverged: pulls never merge or rebase.
     *
     * @param path the repository
     * @throws GitException when the branch cannot be fast-forwarded or the fetch fails
     */
    public void pull(String path) {
        run(path, List.of("pull", "-q", "--ff-only", "--no-rebase"), credentials, timeout);
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
        run(path, List.of("pull", "-q", "--ff-only", "--no-rebase", requireName("remote", remote),
                requireName("branch", branch)), credentials, timeout);
    }

    /**
     * Pushes the current branch to its upstream.
     *
     * @param path the repository
     * @throws GitException when the push is rejected or the branch has no upstream
     */
    public void push(String path) {
        run(path, List.of("push", "-q"), credentials, timeout);
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
        run(path, args, credentials, timeout);
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
        run(path, List.of("remote", "add", requireName("name", name), requireName("url", url)), null, timeout);
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
        String out = run(path, List.of("remote", "get-url", requireName("name", name)), null, timeout).stdoutText();
        return out.endsWith("\n") ? out.substring(0, out.length() - 1) : out;
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
        ExecResult result = exec(path, args, null, timeout);
        Map<String, String> remotes = new LinkedHashMap<>();
        if (result.exitCode() == 1 && result.stderrText().isBlank()) {
            requireRepository(path);
            return remotes; // no remote configured
        }
        check(withRepo(path, args), null, result);
        for (String entry : result.stdoutText().split("\0")) {
            int newline = entry.indexOf('\n');
            if (newline < 0) {
                continue;
            }
            String key = entry.substring(0, newline);
            remotes.putIfAbsent(key.substring("remote.".length(), key.length() - ".url".length()),
                    entry.substring(newline + 1));
        }
        return Collections.unmodifiableMap(remotes);
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
        run(path, withFiles(List.of("add"), files), null, timeout);
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
        run(path, List.of("commit", "-q", "-m", message), null, timeout);
        return run(path, List.of("rev-parse", "HEAD"), null, timeout).stdoutText().strip();
    }

    /**
     * Unstages everything: resets the index to {@code HEAD}, keeping the changes in the working tree.
     *
     * @param path the repository
     * @throws GitException when git fails
     */
    public void reset(String path) {
        run(path, List.of("reset", "-q"), null, timeout);
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
        run(path, List.of("reset", "-q", mode.flag(), requireName("target", target)), null, timeout);
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
        Objects.requireNonNull(options, "options");
        List<String> args = new ArrayList<>(List.of("restore"));
        if (options.isStaged()) {
            args.add("--staged");
        }
        if (options.isWorktree()) {
            args.add("--worktree");
        }
        if (!options.isStaged() && !options.isWorktree()) {
            throw new IllegalArgumentException("restore needs the index (staged) or the working tree, or both");
        }
        options.source().ifPresent(s -> args.add("--source=" + s));
        run(path, withFiles(args, options.files().toArray(String[]::new)), null, timeout);
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
        ExecResult result = exec(path, args, null, timeout);
        if (result.exitCode() == 1 && result.stderrText().isBlank()) {
            requireRepository(path);
            return Optional.empty();
        }
        check(withRepo(path, args), null, result);
        String out = result.stdoutText();
        return Optional.of(out.endsWith("\0") ? out.substring(0, out.length() - 1) : out);
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
        run(path, List.of("config", "--local", "--", requireName("key", key), value), null, timeout);
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

    // ---- running git ----

    private void requireRepository(String path) {
        run(path, List.of("rev-parse", "--git-dir"), null, timeout);
    }

    private static List<String> withFiles(List<String> args, String... files) {
        if (files.length == 0) {
            throw new IllegalArgumentException("give at least one path (\".\" for everything)");
        }
        List<String> all = new ArrayList<>(args);
        all.add("--");
        for (String f : files) {
            Objects.requireNonNull(f, "files must not contain null");
            all.add(f);
        }
        return all;
    }

    /** Runs git in a repository (or, with a {@code null} path, in the working directory); throws on failure. */
    private ExecResult run(String repo, List<String> args, Credentials auth, Duration limit) {
        ExecResult result = exec(repo, args, auth, limit);
        check(withRepo(repo, args), auth, result);
        return result;
    }

    /** Runs git and says whether it succeeded; a timeout still throws. */
    private boolean tryRun(String repo, List<String> args, Credentials auth, Duration limit) {
        return exec(repo, args, auth, limit).success();
    }

    private ExecResult exec(String repo, List<String> args, Credentials auth, Duration limit) {
        List<String> argv = new ArrayList<>();
        if (auth != null) {
            // an empty helper first drops any configured helper, so nothing stores the credentials
            argv.addAll(List.of("-c", "credential.helper=", "-c", "credential.helper=" + CREDENTIAL_HELPER));
        }
        argv.addAll(withRepo(repo, args));
        Command command = Command.of("git", argv)
                .env(Map.of("GIT_TERMINAL_PROMPT", "0", "GCM_INTERACTIVE", "never", "LC_ALL", "C"));
        if (auth != null) {
            command = command.env(Map.of(USERNAME_VARIABLE, auth.username(), PASSWORD_VARIABLE, auth.password()));
        }
        if (limit != null) {
            command = command.timeout(limit);
        }
        try {
            return sandbox.exec(command);
        } catch (ExecTimeoutException e) {
            ExecResult partial = e.partialResult();
            Masker mask = new Masker(auth);
            throw new GitException(mask.command(withRepo(repo, args)), partial.exitCode(), mask.text(partial.stderrText()),
                    mask.text(partial.stdoutText()), true, e);
        }
    }

    private static void check(List<String> args, Credentials auth, ExecResult result) {
        if (result.success()) {
            return;
        }
        Masker mask = new Masker(auth);
        String stderr = result.stderrText();
        if (result.exitCode() == 127) {
            stderr = "git is not installed in the sandbox's image (or not on its PATH)"
                    + (stderr.isBlank() ? "" : ": " + stderr);
        }
        throw new GitException(mask.command(args), result.exitCode(), mask.text(stderr), mask.text(result.stdoutText()),
                false, null);
    }

    private static List<String> withRepo(String repo, List<String> args) {
        if (repo == null) {
            return args;
        }
        List<String> all = new ArrayList<>(args.size() + 2);
        all.add("-C");
        all.add(requirePath(repo));
        all.addAll(args);
        return all;
    }

    // ---- validation and masking ----

    static String requirePath(String path) {
        Objects.requireNonNull(path, "path");
        if (path.isEmpty() || path.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("not a repository path: \"" + path + "\"");
        }
        return path;
    }

    /** Checks a name git would take for an option if it started with a dash. */
    static String requireName(String what, String value) {
        Objects.requireNonNull(value, what);
        if (value.isEmpty() || value.startsWith("-") || value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException(what + " must be non-empty and not start with '-': \"" + value + "\"");
        }
        return value;
    }

    static Duration requireTimeout(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        return timeout;
    }

    /** Replaces the password of any {@code scheme://user:password@} in the text with {@code ****}. */
    static String maskUrls(String text) {
        return URL_PASSWORD.matcher(text).replaceAll(m -> Matcher.quoteReplacement(m.group(1) + ":****@"));
    }

    /** Removes secrets from what a failed command printed. */
    private static final class Masker {
        private final List<String> secrets = new ArrayList<>();

        Masker(Credentials auth) {
            if (auth != null && !auth.password().isEmpty()) {
                String password = auth.password();
                secrets.add(password);
                String encoded = URLEncoder.encode(password, StandardCharsets.UTF_8).replace("+", "%20");
                if (!encoded.equals(password)) {
                    secrets.add(encoded);
                }
            }
        }

        String text(String text) {
            String masked = maskUrls(text);
            for (String secret : secrets) {
                masked = masked.replace(secret, "****");
            }
            return masked;
        }

        List<String> command(List<String> args) {
            List<String> command = new ArrayList<>(args.size() + 1);
            command.add("git");
            for (String arg : args) {
                command.add(text(arg));
            }
            return command;
        }
    }

    /**
     * A user name and password for HTTPS remotes.
     *
     * @param username the user name
     * @param password the password or token
     */
    record Credentials(String username, String password) {
        Credentials {
            Objects.requireNonNull(username, "username");
            Objects.requireNonNull(password, "password");
            for (String value : Arrays.asList(username, password)) {
                if (value.indexOf('\n') >= 0 || value.indexOf('\0') >= 0) {
                    throw new IllegalArgumentException("git credentials cannot contain newlines or NUL");
                }
            }
        }

        @Override
        public String toString() {
            return username + ":****";
        }
    }

    @Override
    public String toString() {
        return "SandboxGit[" + sandbox + (timeout == null ? "" : ", timeout=" + timeout)
                + (credentials == null ? "" : ", credentials=" + credentials) + "]";
    }
}
