package ai.chalk.compute.git;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Reads git's machine-readable output into the SDK's values: {@code status --porcelain=v2 -z}, the
 * {@code for-each-ref} format the helpers ask for, and {@code config -z}. Nothing here runs git.
 */
final class GitOutput {

    /** The {@code for-each-ref} format {@link #branches} reads: fields separated by NUL. */
    static final String BRANCH_FORMAT = "--format=%(refname)%00%(objectname)%00%(upstream:short)%00%(HEAD)%00%(symref)";

    private GitOutput() {}

    static GitStatus status(String output) {
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
        return new GitStatus(
                Optional.ofNullable(detached ? null : branch),
                detached,
                Optional.ofNullable(head),
                Optional.ofNullable(upstream),
                ahead,
                behind,
                staged,
                unstaged,
                untracked,
                conflicted);
    }

    private static void addChanges(
            String xy, String path, String original, List<GitFileChange> staged, List<GitFileChange> unstaged) {
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

    /** The branches in lines of {@link #BRANCH_FORMAT} under {@code prefix}, named without it. */
    static List<GitBranch> branches(List<String> lines, String prefix) {
        List<GitBranch> branches = new ArrayList<>();
        for (String line : lines) {
            String[] f = line.split("\0", -1);
            if (f.length < 5 || !f[4].isEmpty()) {
                continue; // symbolic refs such as origin/HEAD are no branches
            }
            branches.add(new GitBranch(
                    f[0].substring(prefix.length()),
                    f[3].equals("*"),
                    f[1],
                    f[2].isEmpty() ? Optional.empty() : Optional.of(f[2])));
        }
        return Collections.unmodifiableList(branches);
    }

    /** The remotes in {@code config -z --get-regexp} output for {@code remote.<name>.url}, first URL of each. */
    static Map<String, String> remotes(String output) {
        Map<String, String> remotes = new LinkedHashMap<>();
        for (String entry : output.split("\0")) {
            int newline = entry.indexOf('\n');
            if (newline < 0) {
                continue;
            }
            String key = entry.substring(0, newline);
            remotes.putIfAbsent(
                    key.substring("remote.".length(), key.length() - ".url".length()), entry.substring(newline + 1));
        }
        return Collections.unmodifiableMap(remotes);
    }

    /** A value printed by {@code config -z --get}: without its terminating NUL. */
    static String configValue(String output) {
        return output.endsWith("\0") ? output.substring(0, output.length() - 1) : output;
    }

    /** One line of output without its line end. */
    static String line(String output) {
        return output.endsWith("\n") ? output.substring(0, output.length() - 1) : output;
    }
}
