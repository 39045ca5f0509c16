package ai.chalk.compute.git;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Which files {@link SandboxGit#restore(String, RestoreOptions)} restores, where to, and from what.
 * Immutable; each method returns new options.
 *
 * <pre>{@code
 * git.restore("repo", RestoreOptions.files("src/App.java").staged(true).worktree(true).source("HEAD~1"));
 * }</pre>
 *
 * <p>By default the working tree is restored from the index: unstaged changes are discarded.
 * {@code staged(true)} restores the index from {@code HEAD} (unstages).
 */
public final class RestoreOptions {

    private final List<String> files;
    private final boolean staged;
    private final Boolean worktree; // null: the default, the working tree unless only staged is asked for
    private final String source;

    private RestoreOptions(List<String> files, boolean staged, Boolean worktree, String source) {
        this.files = files;
        this.staged = staged;
        this.worktree = worktree;
        this.source = source;
    }

    /**
     * Restores these paths (files, directories, or {@code .} for everything), relative to the
     * repository root.
     *
     * @param files the paths, at least one
     * @return options that restore the working tree from the index
     */
    public static RestoreOptions files(String... files) {
        return files(Arrays.asList(files));
    }

    /**
     * Restores these paths, relative to the repository root.
     *
     * @param files the paths, at least one
     * @return options that restore the working tree from the index
     */
    public static RestoreOptions files(List<String> files) {
        if (files.isEmpty()) {
            throw new IllegalArgumentException("give at least one path to restore (\".\" for everything)");
        }
        files.forEach(f -> {
            Objects.requireNonNull(f, "files must not contain null");
            if (f.isEmpty()) {
                throw new IllegalArgumentException("a path to restore must not be empty");
            }
        });
        return new RestoreOptions(List.copyOf(files), false, null, null);
    }

    /**
     * Whether to restore the index (unstage). Unless {@link #worktree(boolean)} is also set, the
     * working tree is then left alone.
     *
     * @param staged whether to restore the index
     * @return new options
     */
    public RestoreOptions staged(boolean staged) {
        return new RestoreOptions(files, staged, worktree, source);
    }

    /**
     * Whether to restore the working tree.
     *
     * @param worktree whether to restore the working tree
     * @return new options
     */
    public RestoreOptions worktree(boolean worktree) {
        return new RestoreOptions(files, staged, worktree, source);
    }

    /**
     * Restores from this commit instead of the index (working tree) or {@code HEAD} (index).
     *
     * @param source a commit, branch or tag
     * @return new options
     */
    public RestoreOptions source(String source) {
        return new RestoreOptions(files, staged, worktree, GitArguments.requireName("source", source));
    }

    /** The paths to restore. */
    public List<String> files() {
        return files;
    }

    /** Whether the index is restored. */
    public boolean isStaged() {
        return staged;
    }

    /** Whether the working tree is restored. */
    public boolean isWorktree() {
        return worktree != null ? worktree : !staged;
    }

    /** The commit restored from, if not the default. */
    public Optional<String> source() {
        return Optional.ofNullable(source);
    }

    /** The arguments of {@code git restore} for these options. */
    List<String> arguments() {
        if (!isStaged() && !isWorktree()) {
            throw new IllegalArgumentException("restore needs the index (staged) or the working tree, or both");
        }
        List<String> args = new ArrayList<>(List.of("restore"));
        if (isStaged()) {
            args.add("--staged");
        }
        if (isWorktree()) {
            args.add("--worktree");
        }
        source().ifPresent(s -> args.add("--source=" + s));
        return GitArguments.withFiles(args, files.toArray(String[]::new));
    }

    @Override
    public String toString() {
        return "RestoreOptions[files=" + files + ", staged=" + staged + ", worktree=" + isWorktree()
                + (source == null ? "" : ", source=" + source) + "]";
    }
}
