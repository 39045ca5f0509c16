package ai.chalk.compute.git;

import ai.chalk.compute.sandbox.spi.CommandLine;
import ai.chalk.compute.sandbox.spi.CommandOutcome;
import ai.chalk.compute.sandbox.spi.ExecTarget;
import ai.chalk.compute.sandbox.spi.TimedOutCommand;
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

    private final ExecTarget sandbox;

    GitRunner(ExecTarget sandbox) {
        this.sandbox = Objects.requireNonNull(sandbox, "sandbox");
    }

    /**
     * Runs git in a repository (or, with a {@code null} repository, in the working directory); throws on failure.
     *
     * @param auth  credentials for a command that reaches a remote, else {@code null}
     * @param limit the time limit, or {@code null} for none
     */
    CommandOutcome run(String repo, List<String> args, GitCredentials auth, Duration limit) {
        CommandOutcome result = exec(repo, args, auth, limit);
        check(GitArguments.withRepo(repo, args), auth, result);
        return result;
    }

    /** Runs git and says whether it succeeded; a timeout still throws. */
    boolean tryRun(String repo, List<String> args, GitCredentials auth, Duration limit) {
        return exec(repo, args, auth, limit).success();
    }

    /** Runs git and returns its result whatever its exit code; a timeout throws. */
    CommandOutcome exec(String repo, List<String> args, GitCredentials auth, Duration limit) {
        List<String> argv = new ArrayList<>();
        if (auth != null) {
            argv.addAll(auth.configOptions());
        }
        argv.addAll(GitArguments.withRepo(repo, args));
        CommandLine command = CommandLine.of("git", argv)
                .withEnv(Map.of("GIT_TERMINAL_PROMPT", "0", "GCM_INTERACTIVE", "never", "LC_ALL", "C"))
                .withTimeout(limit);
        if (auth != null) {
            command = command.withEnv(auth.environment());
        }
        try {
            return sandbox.run(command);
        } catch (RuntimeException e) {
            if (!(e instanceof TimedOutCommand timedOut)) {
                throw e;
            }
            CommandOutcome partial = timedOut.partialResult();
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
    Optional<CommandOutcome> lookUpConfig(String repo, List<String> args, Duration limit) {
        CommandOutcome result = exec(repo, args, null, limit);
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
        sandbox.run(CommandLine.of("rm", List.of("-rf", "--", path)));
    }

    private static void check(List<String> args, GitCredentials auth, CommandOutcome result) {
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
