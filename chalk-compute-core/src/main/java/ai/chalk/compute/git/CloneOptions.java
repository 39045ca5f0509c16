package ai.chalk.compute.git;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * What {@link SandboxGit#clone(CloneOptions)} clones and how. Immutable; each method returns new
 * options.
 *
 * <pre>{@code
 * sandbox.git().clone(CloneOptions.of("https://github.com/acme/app.git", "app")
 *         .branch("release")
 *         .depth(10)
 *         .credentials("x-access-token", token)
 *         .timeout(Duration.ofMinutes(5)));
 * }</pre>
 *
 * <p>By default the remote's default branch is cloned with a history depth of 1, like the SDK. A
 * shallow clone fetches only the cloned branch; clone with {@link #fullHistory()} to work with the
 * other branches.
 */
public final class CloneOptions {

    private final String url;
    private final String path;
    private final String branch;
    private final String commitId;
    private final int depth;
    private final GitCredentials credentials;
    private final Duration timeout;

    private CloneOptions(
            String url,
            String path,
            String branch,
            String commitId,
            int depth,
            GitCredentials credentials,
            Duration timeout) {
        this.url = url;
        this.path = path;
        this.branch = branch;
        this.commitId = commitId;
        this.depth = depth;
        this.credentials = credentials;
        this.timeout = timeout;
    }

    /**
     * Clones the repository at a URL into a directory of the sandbox.
     *
     * @param url  the remote repository: {@code https://}, {@code ssh://}, {@code git@host:path},
     *             {@code file://} or a path in the sandbox. Put credentials in
     *             {@link #credentials(String, String)}, not in the URL, or they are saved in the
     *             repository's configuration
     * @param path the directory to create, relative to the sandbox's working directory or absolute
     * @return the options: default branch, depth 1
     */
    public static CloneOptions of(String url, String path) {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(path, "path");
        if (url.isEmpty()) {
            throw new IllegalArgumentException("url must not be empty");
        }
        return new CloneOptions(url, GitArguments.requirePath(path), null, null, 1, null, null);
    }

    /**
     * Clones this branch (or tag) instead of the remote's default branch; it is checked out.
     *
     * @param branch the branch's name
     * @return new options
     */
    public CloneOptions branch(String branch) {
        return new CloneOptions(
                url, path, GitArguments.requireName("branch", branch), commitId, depth, credentials, timeout);
    }

    /**
     * Checks out this commit, detached, after cloning. Give the full commit id when cloning
     * shallowly, so that the commit can be fetched if it is not within the cloned depth.
     *
     * @param commitId the commit's id
     * @return new options
     */
    public CloneOptions commitId(String commitId) {
        return new CloneOptions(
                url, path, branch, GitArguments.requireName("commitId", commitId), depth, credentials, timeout);
    }

    /**
     * Fetches only the last {@code depth} commits of history; {@code null} or 0 fetch the full history.
     *
     * @param depth the number of commits, or {@code null} for all
     * @return new options
     */
    public CloneOptions depth(Integer depth) {
        if (depth != null && depth < 0) {
            throw new IllegalArgumentException("depth must not be negative, got " + depth);
        }
        return new CloneOptions(url, path, branch, commitId, depth == null ? 0 : depth, credentials, timeout);
    }

    /** Fetches the full history and all branches: the same as {@code depth(null)}. */
    public CloneOptions fullHistory() {
        return depth(null);
    }

    /**
     * Authenticates to an HTTPS remote with a user name and password (or token). They are given to
     * git for the clone command only, through environment variables of that command: they are not in
     * the command line, not in the remote URL and not saved in the repository.
     *
     * @param username the user name
     * @param password the password or token
     * @return new options
     */
    public CloneOptions credentials(String username, String password) {
        return new CloneOptions(url, path, branch, commitId, depth, new GitCredentials(username, password), timeout);
    }

    /**
     * Kills each git command of the clone that runs longer than this (a clone at a commit runs
     * several); replaces the helper's own timeout.
     *
     * @param timeout a positive duration, rounded up to whole seconds
     * @return new options
     */
    public CloneOptions timeout(Duration timeout) {
        return new CloneOptions(url, path, branch, commitId, depth, credentials, GitArguments.requireTimeout(timeout));
    }

    /** The remote repository. */
    public String url() {
        return url;
    }

    /** The directory to clone into. */
    public String path() {
        return path;
    }

    /** The branch to clone, when not the remote's default. */
    public Optional<String> branch() {
        return Optional.ofNullable(branch);
    }

    /** The commit to check out, if any. */
    public Optional<String> commitId() {
        return Optional.ofNullable(commitId);
    }

    /** The history depth; empty for the full history. */
    public OptionalInt depth() {
        return depth == 0 ? OptionalInt.empty() : OptionalInt.of(depth);
    }

    /** Whether credentials are set. */
    public boolean hasCredentials() {
        return credentials != null;
    }

    /** The timeout per command, if set. */
    public Optional<Duration> timeout() {
        return Optional.ofNullable(timeout);
    }

    GitCredentials credentialsOrNull() {
        return credentials;
    }

    /** The options, with the password left out. */
    @Override
    public String toString() {
        return "CloneOptions[url=" + SecretMask.maskUrls(url) + ", path=" + path
                + (branch == null ? "" : ", branch=" + branch)
                + (commitId == null ? "" : ", commitId=" + commitId)
                + ", depth=" + (depth == 0 ? "full" : depth)
                + (credentials == null ? "" : ", credentials=" + credentials)
                + (timeout == null ? "" : ", timeout=" + timeout) + "]";
    }
}
