package ai.chalk.compute.git;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.ExecTimeoutException;
import ai.chalk.compute.sandbox.Sandbox;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Runs git in a sandbox for the helpers: through exec, never a shell; never prompting; with messages in English; with
 * a helper's time limit and, on the commands that reach a remote, its credentials. A command that fails or times out
 * becomes a {@link GitException} with the secrets masked.
 */
final class GitRunner {

    private final Sandbox sandbox;

    GitRunner(Sandbox sandbox) {
        this.sandbox = Objects.requireNonNull(sandbox, "sandbox");
    }

    /**
     * Runs git in a repository (or, with a {@code null} repository, in the working directory); throws on failure.
     *
     * @param auth  credentials for a command that reaches a remote, else {@code null}
     * @param limit the time limit, or {@code null} for none
     */
    ExecResult run(String repo, List<String> args, GitCredentials auth, Duration limit) {
        ExecResult result = exec(repo, args, auth, limit);
        check(GitArguments.withRepo(repo, args), auth, result);
        return result;
    }

    /** Runs git and says whether it succeeded; a timeout still throws. */
    boolean tryRun(String repo, List<String> args, GitCredentials auth, Duration limit) {
        return exec(repo, args, auth, limit).success();
    }

    /** Runs git and returns its result whatever its exit code; a timeout throws. */
    ExecResult exec(String repo, List<String> args, GitCredentials auth, Duration limit) {
        List<String> argv = new ArrayList<>();
        if (auth != null) {
            argv.addAll(auth.configOptions());
        }
        argv.addAll(GitArguments.withRepo(repo, args));
        Command command = Command.of("git", argv)
                .env(Map.of("GIT_TERMINAL_PROMPT", "0", "GCM_INTERACTIVE", "never", "LC_ALL", "C"));
        if (auth != null) {
            command = command.env(auth.environment());
        }
        if (limit != null) {
            command = command.timeout(limit);
        }
        try {
            return sandbox.exec(command);
        } catch (ExecTimeoutException e) {
            ExecResult partial = e.partialResult();
            SecretMask mask = new SecretMask(auth);
            throw new GitException(
                    mask.command(GitArguments.withRepo(repo, args)),
                    partial.exitCode(),
                    mask.text(partial.stderrText()),
                    mask.text(partial.stdoutText()),
                    true,
                    e);
        }
    }

    /**
     * Runs a {@code git config} lookup in a repository. git exits with 1 and says nothing when no key matches: then
     * the result is empty, once the path is known to be a repository (outside one, git config still reads the user's
     * and the system's configuration and would answer).
     */
    Optional<ExecResult> lookUpConfig(String repo, List<String> args, Duration limit) {
        ExecResult result = exec(repo, args, null, limit);
        if (result.exitCode() == 1 && result.stderrText().isBlank()) {
            run(repo, List.of("rev-parse", "--git-dir"), null, limit);
            return Optional.empty();
        }
        check(GitArguments.withRepo(repo, args), null, result);
        return Optional.of(result);
    }

    /**
     * Removes a directory the helpers created, such as a clone that failed part way. The caller is failing already,
     * with the reason the user needs, so this outcome is not checked.
     */
    void removeDirectory(String path) {
        sandbox.exec(Command.of("rm", "-rf", "--", path));
    }

    private static void check(List<String> args, GitCredentials auth, ExecResult result) {
        if (result.success()) {
            return;
        }
        SecretMask mask = new SecretMask(auth);
        String stderr = result.stderrText();
        if (result.exitCode() == 127) {
            stderr = "git is not installed in the sandbox's image (or not on its PATH)"
                    + (stderr.isBlank() ? "" : ": " + stderr);
        }
        throw new GitException(
                mask.command(args), result.exitCode(), mask.text(stderr), mask.text(result.stdoutText()), false, null);
    }
}
