package ai.chalk.compute.git;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What the user passes to the git helpers, checked before it becomes an argument of git: git would take a name
 * starting with a dash for an option, and an argument cannot hold NUL. Also the argument lists several helpers share.
 */
final class GitArguments {

    private GitArguments() {}

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

    /** The arguments followed by {@code --} and the files, so that no file name is read as an option. */
    static List<String> withFiles(List<String> args, String... files) {
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

    /** The arguments run in a repository ({@code -C repo}), or as they are with a {@code null} repository. */
    static List<String> withRepo(String repo, List<String> args) {
        if (repo == null) {
            return args;
        }
        List<String> all = new ArrayList<>(args.size() + 2);
        all.add("-C");
        all.add(requirePath(repo));
        all.addAll(args);
        return all;
    }
}
