package ai.chalk.compute.git;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The git helpers running the real git of real sandboxes, against a bare repository created in the
 * same sandbox ({@code /srv/origin.git}, branches main with three commits and dev with one more),
 * pushed to from a seed clone ({@code /srv/seed}) to play another developer.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SandboxGitTest {

    static final String ORIGIN = "file:///srv/origin.git";
    static final String SEED_IDENTITY = "export GIT_AUTHOR_NAME=Seed GIT_AUTHOR_EMAIL=seed@example.com "
            + "GIT_COMMITTER_NAME=Seed GIT_COMMITTER_EMAIL=seed@example.com\n";

    ComputeServer server;
    SandboxClient client;
    Sandbox sandbox;
    SandboxGit git;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).build().start();
        client = SandboxClient.inProcess(server.inProcessName());
    }

    @AfterAll
    void stop() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @BeforeEach
    void newSandboxWithOrigin() {
        sandbox = client.create();
        git = sandbox.git();
        sh(SEED_IDENTITY + """
                set -e
                git init -q --bare -b main /srv/origin.git
                git init -q -b main /srv/seed
                cd /srv/seed
                echo one > a.txt && git add a.txt && git commit -qm one
                echo two >> a.txt && git commit -qam two
                echo three >> a.txt && git commit -qam three
                git checkout -qb dev && echo dev > dev.txt && git add dev.txt && git commit -qm dev
                git checkout -q main
                git remote add origin /srv/origin.git
                git push -q origin main dev
                git branch -q -u origin/main main
                """);
    }

    @AfterEach
    void terminate() {
        sandbox.terminate();
    }

    String sh(String script, String... args) {
        List<String> argv = new ArrayList<>(List.of("-c", script, "sh"));
        argv.addAll(List.of(args));
        ExecResult result = sandbox.exec(Command.of("sh", argv));
        assertThat(result.success()).as("%s: %s", script, result.stderrText()).isTrue();
        return result.stdoutText();
    }

    String rev(String repo, String rev) {
        return sh("git -C \"$1\" rev-parse \"$2\"", repo, rev).strip();
    }

    int commitCount(String repo) {
        return Integer.parseInt(sh("git -C \"$1\" rev-list --count HEAD", repo).strip());
    }

    /** Another developer pushes a commit to origin's main; returns its id. */
    String seedPushes(String message) {
        sh(
                SEED_IDENTITY
                        + "set -e; cd /srv/seed; git pull -q --ff-only origin main; echo \"$1\" >> seed.txt; git add seed.txt; git commit -qm \"$1\"; "
                        + "git push -q origin main",
                message);
        return rev("/srv/seed", "HEAD");
    }

    // ---- clone ----

    @Test
    void cloneTakesTheDefaultBranchWithDepthOne() {
        git.clone(ORIGIN, "repo");
        GitStatus status = git.status("repo");
        assertThat(status.currentBranch()).contains("main");
        assertThat(status.detached()).isFalse();
        assertThat(status.headCommit()).contains(rev("/srv/seed", "main"));
        assertThat(status.upstream()).contains("origin/main");
        assertThat(status.ahead()).isEqualTo(OptionalInt.of(0));
        assertThat(status.behind()).isEqualTo(OptionalInt.of(0));
        assertThat(status.isClean()).isTrue();
        assertThat(commitCount("repo")).isEqualTo(1);
        assertThat(sh("git -C repo rev-parse --is-shallow-repository").strip()).isEqualTo("true");
        assertThat(sandbox.files().readText("/workspace/repo/a.txt"))
                .as("relative to the working directory")
                .isEqualTo("one\ntwo\nthree\n");
    }

    @Test
    void cloneSelectsBranchDepthAndCommit() {
        String main = rev("/srv/seed", "main");
        String second = rev("/srv/seed", "main~1");

        git.clone(CloneOptions.of(ORIGIN, "dev").branch("dev"));
        assertThat(git.status("dev").currentBranch()).contains("dev");
        assertThat(sandbox.files().readText("dev/dev.txt")).isEqualTo("dev\n");

        git.clone(CloneOptions.of(ORIGIN, "full").depth(null));
        assertThat(commitCount("full")).isEqualTo(3);
        assertThat(git.remoteBranches("full")).extracting(GitBranch::name).containsExactly("origin/dev", "origin/main");

        git.clone(CloneOptions.of(ORIGIN, "two").depth(2));
        assertThat(commitCount("two")).isEqualTo(2);

        // a commit outside the default depth of 1 is fetched by id; absolute paths work too
        git.clone(CloneOptions.of(ORIGIN, "/workspace/at-commit").commitId(second));
        GitStatus atCommit = git.status("/workspace/at-commit");
        assertThat(atCommit.detached()).isTrue();
        assertThat(atCommit.currentBranch()).isEmpty();
        assertThat(atCommit.headCommit()).contains(second);
        assertThat(sandbox.files().readText("at-commit/a.txt")).isEqualTo("one\ntwo\n");
        assertThat(commitCount("at-commit")).isEqualTo(1);

        // with the full history an abbreviated id is enough; branch and commit together
        git.clone(CloneOptions.of(ORIGIN, "abbrev").fullHistory().branch("dev").commitId(second.substring(0, 8)));
        assertThat(git.status("abbrev").headCommit()).contains(second);
        assertThat(git.branches("abbrev")).extracting(GitBranch::name).containsExactly("dev");

        // the tip of the default branch needs no fetch
        git.clone(CloneOptions.of(ORIGIN, "tip").commitId(main));
        assertThat(git.status("tip").headCommit()).contains(main);
    }

    @Test
    void aFailedCloneRaisesGitExceptionAndLeavesNoDirectory() {
        assertThatThrownBy(() -> git.clone(
                        CloneOptions.of(ORIGIN, "bad-commit").commitId("0123456789abcdef0123456789abcdef01234567")))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("0123456789abcdef0123456789abcdef01234567");
        assertThat(sandbox.files().exists("bad-commit")).isFalse();

        assertThatThrownBy(() -> git.clone("file:///srv/missing.git", "missing"))
                .isInstanceOf(GitException.class)
                .satisfies(e -> {
                    GitException error = (GitException) e;
                    assertThat(error.command())
                            .containsExactly(
                                    "git", "clone", "-q", "--depth", "1", "--", "file:///srv/missing.git", "missing");
                    assertThat(error.exitCode()).isEqualTo(128);
                    assertThat(error.stderr()).contains("does not appear to be a git repository");
                    assertThat(error.timedOut()).isFalse();
                    assertThat(error.statusCode()).isEqualTo(Status.Code.UNKNOWN);
                    assertThat(error).isInstanceOf(ChalkComputeException.class);
                });
        assertThat(sandbox.files().exists("missing")).isFalse();

        git.clone(ORIGIN, "twice");
        assertThatThrownBy(() -> git.clone(ORIGIN, "twice"))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("already exists");
        assertThat(sandbox.files().exists("twice/a.txt"))
                .as("an existing clone is kept")
                .isTrue();
    }

    // ---- status ----

    @Test
    void statusReportsStagedUnstagedUntrackedRenamesAndTracking() {
        git.clone(CloneOptions.of(ORIGIN, "repo").fullHistory());
        git.configureUser("repo", "Agent", "agent@example.com");
        sh("cd repo && echo old > 'old name.txt' && git add . && git commit -qm 'add old'");

        sh("""
                cd repo
                echo staged > staged.txt && git add staged.txt
                echo changed >> a.txt
                git mv 'old name.txt' 'new name.txt'
                rm dev.txt 2>/dev/null || true
                mkdir -p 'un tracked' && echo u > 'un tracked/file one.txt'
                """);
        GitStatus status = git.status("repo");
        assertThat(status.currentBranch()).contains("main");
        assertThat(status.staged())
                .containsExactlyInAnyOrder(
                        new GitFileChange("staged.txt", GitFileChange.Kind.ADDED, java.util.Optional.empty()),
                        new GitFileChange(
                                "new name.txt", GitFileChange.Kind.RENAMED, java.util.Optional.of("old name.txt")));
        assertThat(status.unstaged())
                .containsExactly(new GitFileChange("a.txt", GitFileChange.Kind.MODIFIED, java.util.Optional.empty()));
        assertThat(status.untracked()).containsExactly("un tracked/file one.txt");
        assertThat(status.conflicted()).isEmpty();
        assertThat(status.isClean()).isFalse();
        assertThat(status.ahead()).isEqualTo(OptionalInt.of(1));

        git.add("repo", ".");
        git.commit("repo", "work");
        assertThat(git.status("repo").isClean()).isTrue();
        assertThat(git.status("repo").ahead()).isEqualTo(OptionalInt.of(2));

        seedPushes("elsewhere");
        assertThat(git.status("repo").behind()).as("not fetched yet").isEqualTo(OptionalInt.of(0));
        git.fetch("repo");
        GitStatus diverged = git.status("repo");
        assertThat(diverged.ahead()).isEqualTo(OptionalInt.of(2));
        assertThat(diverged.behind()).isEqualTo(OptionalInt.of(1));
    }

    @Test
    void statusOfANewRepositoryAndOfAConflict() {
        git.init("fresh", "trunk");
        GitStatus fresh = git.status("fresh");
        assertThat(fresh.currentBranch()).contains("trunk");
        assertThat(fresh.headCommit()).isEmpty();
        assertThat(fresh.upstream()).isEmpty();
        assertThat(fresh.ahead()).isEmpty();
        assertThat(git.branches("fresh")).isEmpty();

        git.clone(CloneOptions.of(ORIGIN, "repo").fullHistory());
        git.configureUser("repo", "Agent", "agent@example.com");
        sh("cd repo && git switch -q dev && echo mine > a.txt && git commit -qam mine && git switch -q main "
                + "&& echo theirs > a.txt && git commit -qam theirs && (git merge -q dev || true)");
        assertThat(git.status("repo").conflicted()).containsExactly("a.txt");
    }

    // ---- branches ----

    @Test
    void branchesCanBeCreatedCheckedOutAndDeleted() {
        git.clone(CloneOptions.of(ORIGIN, "repo").fullHistory());
        git.configureUser("repo", "Agent", "agent@example.com");
        String main = rev("repo", "HEAD");
        assertThat(git.branches("repo"))
                .containsExactly(new GitBranch("main", true, main, java.util.Optional.of("origin/main")));

        git.createBranch("repo", "feature");
        git.createBranch("repo", "older", "HEAD~2");
        assertThat(git.status("repo").currentBranch())
                .as("creating does not check out")
                .contains("main");
        git.checkoutBranch("repo", "feature");
        assertThat(git.status("repo").currentBranch()).contains("feature");
        sh("cd repo && echo f > feature.txt");
        git.add("repo", "feature.txt");
        String featureCommit = git.commit("repo", "feature work");
        assertThat(featureCommit).isEqualTo(rev("repo", "HEAD")).hasSize(40);

        assertThat(git.branches("repo"))
                .extracting(GitBranch::name, GitBranch::current, GitBranch::commit)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("feature", true, featureCommit),
                        org.assertj.core.groups.Tuple.tuple("main", false, main),
                        org.assertj.core.groups.Tuple.tuple("older", false, rev("repo", "main~2")));

        git.checkoutBranch("repo", "main");
        assertThatThrownBy(() -> git.deleteBranch("repo", "feature"))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("not fully merged")
                .satisfies(e -> assertThat(((GitException) e).command())
                        .containsExactly("git", "-C", "repo", "branch", "-d", "feature"));
        git.deleteBranch("repo", "feature", true);
        git.deleteBranch("repo", "older"); // merged: no force needed
        assertThat(git.branches("repo")).extracting(GitBranch::name).containsExactly("main");

        // a branch only the remote has becomes a local branch tracking it
        git.checkoutBranch("repo", "dev");
        assertThat(git.branches("repo"))
                .filteredOn(GitBranch::current)
                .containsExactly(
                        new GitBranch("dev", true, rev("repo", "origin/dev"), java.util.Optional.of("origin/dev")));

        assertThatThrownBy(() -> git.checkoutBranch("repo", "no-such-branch")).isInstanceOf(GitException.class);
        assertThatThrownBy(() -> git.createBranch("repo", "dev"))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("already exists");
        assertThatThrownBy(() -> git.createBranch("repo", "-D")).isInstanceOf(IllegalArgumentException.class);
    }

    // ---- fetch, pull, push ----

    @Test
    void pullFastForwardsOnly() {
        git.clone(ORIGIN, "repo");
        git.configureUser("repo", "Agent", "agent@example.com");
        String first = seedPushes("first");
        git.fetch("repo", "origin");
        assertThat(git.status("repo").behind()).isEqualTo(OptionalInt.of(1));
        git.pull("repo");
        assertThat(rev("repo", "HEAD")).isEqualTo(first);

        String second = seedPushes("second");
        git.pull("repo", "origin", "main");
        assertThat(rev("repo", "HEAD")).isEqualTo(second);

        // diverged: local work and new remote work; the pull refuses and changes nothing
        sh("cd repo && echo local > local.txt");
        git.add("repo", "local.txt");
        String local = git.commit("repo", "local work");
        seedPushes("third");
        assertThatThrownBy(() -> git.pull("repo"))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("Not possible to fast-forward")
                .satisfies(e -> assertThat(((GitException) e).command()).contains("--ff-only"));
        assertThat(rev("repo", "HEAD")).isEqualTo(local);
        assertThat(git.status("repo").isClean()).isTrue();
    }

    @Test
    void pushSendsCommitsAndBranches() {
        // the full history: a shallow clone tracks only its one branch, so a pushed branch could not be its upstream
        git.clone(CloneOptions.of(ORIGIN, "repo").fullHistory());
        git.configureUser("repo", "Agent", "agent@example.com");
        sh("cd repo && echo pushed > pushed.txt");
        git.add("repo", "pushed.txt");
        String commit = git.commit("repo", "to push");
        assertThat(git.status("repo").ahead()).isEqualTo(OptionalInt.of(1));
        git.push("repo");
        assertThat(rev("/srv/origin.git", "main")).isEqualTo(commit);
        assertThat(git.status("repo").ahead()).isEqualTo(OptionalInt.of(0));

        git.createBranch("repo", "topic");
        git.checkoutBranch("repo", "topic");
        assertThatThrownBy(() -> git.push("repo")).as("no upstream yet").isInstanceOf(GitException.class);
        git.push("repo", "origin", "topic", true);
        assertThat(rev("/srv/origin.git", "topic")).isEqualTo(commit);
        assertThat(git.status("repo").upstream()).contains("origin/topic");

        git.checkoutBranch("repo", "main");
        seedPushes("someone else's");
        sh("cd repo && echo again >> pushed.txt && git commit -qam again");
        assertThatThrownBy(() -> git.push("repo", "origin", "main"))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("rejected");
    }

    // ---- reset and restore ----

    @Test
    void resetAndRestoreUndoChanges() {
        git.clone(CloneOptions.of(ORIGIN, "repo").fullHistory());
        var files = sandbox.files();

        files.writeText("repo/a.txt", "scribbled\n");
        git.restore("repo", "a.txt");
        assertThat(files.readText("repo/a.txt")).isEqualTo("one\ntwo\nthree\n");

        files.writeText("repo/a.txt", "staged change\n");
        git.add("repo", "a.txt");
        git.reset("repo");
        GitStatus afterReset = git.status("repo");
        assertThat(afterReset.staged()).isEmpty();
        assertThat(afterReset.unstaged()).extracting(GitFileChange::path).containsExactly("a.txt");
        assertThat(files.readText("repo/a.txt"))
                .as("a mixed reset keeps the change")
                .isEqualTo("staged change\n");

        git.add("repo", "a.txt");
        git.restore("repo", RestoreOptions.files("a.txt").staged(true));
        assertThat(git.status("repo").staged()).isEmpty();
        assertThat(files.readText("repo/a.txt")).isEqualTo("staged change\n");

        git.restore("repo", RestoreOptions.files("a.txt").source("HEAD~1"));
        assertThat(files.readText("repo/a.txt")).isEqualTo("one\ntwo\n");
        git.add("repo", "a.txt");
        git.restore("repo", RestoreOptions.files(".").worktree(true).staged(true));
        assertThat(git.status("repo").isClean()).isTrue();

        String second = rev("repo", "HEAD~1");
        git.reset("repo", ResetMode.SOFT, "HEAD~1");
        assertThat(rev("repo", "HEAD")).isEqualTo(second);
        assertThat(git.status("repo").staged()).extracting(GitFileChange::path).containsExactly("a.txt");
        git.reset("repo", ResetMode.HARD, "origin/main~2");
        assertThat(files.readText("repo/a.txt")).isEqualTo("one\n");
        assertThat(git.status("repo").isClean()).isTrue();
        assertThat(git.status("repo").behind()).isEqualTo(OptionalInt.of(2));

        assertThatThrownBy(() -> git.restore("repo", "not-tracked.txt"))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("did not match");
        assertThatThrownBy(() -> git.reset("repo", ResetMode.HARD, "no-such-commit"))
                .isInstanceOf(GitException.class);
    }

    // ---- remotes and config ----

    @Test
    void remotesAndRepositoryScopedConfig() {
        git.init("cfg", "main");
        assertThat(git.remotes("cfg")).isEmpty();
        git.remoteAdd("cfg", "origin", ORIGIN);
        git.remoteAdd("cfg", "upstream", "https://example.com/team/project.git");
        assertThat(git.remoteGet("cfg", "origin")).isEqualTo(ORIGIN);
        assertThat(git.remotes("cfg"))
                .containsExactly(entry("origin", ORIGIN), entry("upstream", "https://example.com/team/project.git"));
        assertThatThrownBy(() -> git.remoteGet("cfg", "nope"))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("No such remote");
        assertThatThrownBy(() -> git.remoteAdd("cfg", "origin", ORIGIN))
                .isInstanceOf(GitException.class)
                .hasMessageContaining("already exists");

        assertThat(git.getConfig("cfg", "pull.rebase")).isEmpty();
        git.setConfig("cfg", "pull.rebase", "false");
        git.setConfig("cfg", "chalk.odd", "-starts with a dash\nand has a second line");
        assertThat(git.getConfig("cfg", "pull.rebase")).contains("false");
        assertThat(git.getConfig("cfg", "chalk.odd")).contains("-starts with a dash\nand has a second line");
        git.configureUser("cfg", "Agent Smith", "agent@example.com");
        assertThat(git.getConfig("cfg", "user.name")).contains("Agent Smith");
        assertThat(git.getConfig("cfg", "user.email")).contains("agent@example.com");
        assertThat(sandbox.files().readText("cfg/.git/config")).contains("name = Agent Smith");

        // only that repository changed: not the sandbox user's configuration, not other repositories
        git.init("other");
        assertThat(git.getConfig("other", "user.name")).isEmpty();
        assertThat(sandbox.exec("git", "config", "--global", "--get", "user.name")
                        .success())
                .isFalse();
        assertThat(sandbox.files().exists("/root/.gitconfig")).isFalse();

        assertThatThrownBy(() -> git.getConfig("cfg", "not a key")).isInstanceOf(GitException.class);
        assertThatThrownBy(() -> git.remotes("not-a-repo")).isInstanceOf(GitException.class);
        assertThatThrownBy(() -> git.getConfig("not-a-repo", "user.name")).isInstanceOf(GitException.class);
    }

    // ---- failures ----

    @Test
    void failuresCarryTheCommandExitCodeAndStderr() {
        sh("mkdir -p not-a-repo");
        assertThatThrownBy(() -> git.status("not-a-repo"))
                .isInstanceOf(GitException.class)
                .hasMessageStartingWith("UNKNOWN: git -C not-a-repo status --porcelain=v2 --branch -z "
                        + "--untracked-files=all failed with exit code 128: fatal: not a git repository")
                .satisfies(e -> {
                    GitException error = (GitException) e;
                    assertThat(error.exitCode()).isEqualTo(128);
                    assertThat(error.stderr()).startsWith("fatal: not a git repository");
                });
        git.init("empty");
        assertThatThrownBy(() -> git.commit("empty", "nothing"))
                .isInstanceOf(GitException.class)
                .satisfies(e -> assertThat(((GitException) e).exitCode()).isNotZero());
    }

    @Test
    void theTimeoutAppliesToEachCommand() {
        git.clone(ORIGIN, "repo");
        // an SSH remote whose "ssh" never answers
        git.remoteAdd("repo", "slow", "ssh://git.example.invalid/slow.git");
        git.setConfig("repo", "core.sshCommand", "sleep 60; true"); // git appends the host and command
        long start = System.nanoTime();
        assertThatThrownBy(() -> git.withTimeout(Duration.ofSeconds(1)).fetch("repo", "slow"))
                .isInstanceOf(GitException.class)
                .satisfies(e -> {
                    GitException error = (GitException) e;
                    assertThat(error.timedOut()).isTrue();
                    assertThat(error.statusCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
                    assertThat(error.getMessage()).contains("git -C repo fetch -q slow timed out");
                });
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
        // quick commands are unaffected by the same timeout
        assertThat(git.withTimeout(Duration.ofSeconds(5)).status("repo").currentBranch())
                .contains("main");
    }

    @Test
    void invalidArgumentsAreRejectedBeforeAnythingRuns() {
        assertThatThrownBy(() -> git.checkoutBranch("repo", "--orphan")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> git.status("")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> git.withTimeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> CloneOptions.of(ORIGIN, "x").depth(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> git.withCredentials("user", "two\nlines"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> git.add("repo")).isInstanceOf(IllegalArgumentException.class);
    }
}
