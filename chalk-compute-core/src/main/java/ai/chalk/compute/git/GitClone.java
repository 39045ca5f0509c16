package ai.chalk.compute.git;

import ai.chalk.compute.sandbox.spi.CommandOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

/**
 * A clone as {@link CloneOptions} describe it. A clone of one commit takes several commands (clone without checkout,
 * find or fetch the commit, check it out detached), and a failure in any of them removes the new directory, so the
 * user never finds half a clone.
 */
final class GitClone {

    private final GitRunner git;

    GitClone(GitRunner git) {
        this.git = git;
    }

    /**
     * @param auth  the credentials of the options, or of the helpers, or {@code null}
     * @param limit the time limit of each command, or {@code null}
     */
    void clone(CloneOptions options, GitCredentials auth, Duration limit) {
        List<String> args = new ArrayList<>(List.of("clone", "-q"));
        options.depth().ifPresent(d -> args.addAll(List.of("--depth", Integer.toString(d))));
        options.branch().ifPresent(b -> args.addAll(List.of("--branch", b)));
        if (options.commitId().isPresent()) {
            args.add("--no-checkout");
        }
        args.addAll(List.of("--", options.url(), options.path()));
        git.run(null, args, auth, limit);
        if (options.commitId().isEmpty()) {
            return;
        }
        try {
            checkoutCommit(options.path(), options.commitId().get(), options.depth(), auth, limit);
        } catch (GitException e) {
            git.removeDirectory(options.path());
            throw e;
        }
    }

    private void checkoutCommit(String repo, String commit, OptionalInt depth, GitCredentials auth, Duration limit) {
        List<String> checkout = List.of("checkout", "-q", "--detach", commit);
        if (git.tryRun(repo, List.of("cat-file", "-e", commit + "^{commit}"), null, limit)) {
            git.run(repo, checkout, null, limit);
            return;
        }
        // not in the clone: fetch it by id (servers allow this for reachable commits with protocol v2)
        List<String> fetch = new ArrayList<>(List.of("fetch", "-q"));
        depth.ifPresent(d -> fetch.addAll(List.of("--depth", Integer.toString(d))));
        fetch.addAll(List.of("origin", commit));
        if (git.tryRun(repo, fetch, auth, limit)) {
            git.run(repo, List.of("checkout", "-q", "--detach", "FETCH_HEAD"), null, limit);
            return;
        }
        // last resort: all of the remote's history, then the commit (an abbreviated id works here)
        List<String> fetchAll = new ArrayList<>(List.of("fetch", "-q"));
        CommandOutcome shallow = git.exec(repo, List.of("rev-parse", "--is-shallow-repository"), null, limit);
        if (shallow.success() && shallow.stdoutText().strip().equals("true")) {
            fetchAll.add("--unshallow");
        }
        fetchAll.addAll(List.of("origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"));
        git.run(repo, fetchAll, auth, limit);
        git.run(repo, checkout, null, limit);
    }
}
