package ai.chalk.compute.git;

/** How {@link SandboxGit#reset(String, ResetMode, String)} moves the current branch. */
public enum ResetMode {
    /** Moves the branch only; the index and working tree keep their changes ({@code --soft}). */
    SOFT,
    /** Moves the branch and resets the index; changes stay in the working tree, unstaged ({@code --mixed}). */
    MIXED,
    /** Moves the branch and discards all changes to tracked files in the index and working tree ({@code --hard}). */
    HARD;

    String flag() {
        return "--" + name().toLowerCase(java.util.Locale.ROOT);
    }
}
