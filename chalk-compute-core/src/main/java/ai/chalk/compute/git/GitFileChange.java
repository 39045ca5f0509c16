package ai.chalk.compute.git;

import java.util.Objects;
import java.util.Optional;

/**
 * A changed file in a {@link GitStatus}, staged or not.
 *
 * @param path         the file's path, relative to the repository root
 * @param kind         what changed
 * @param originalPath for a rename or copy, the path it came from
 */
public record GitFileChange(String path, Kind kind, Optional<String> originalPath) {

    /** Checks that no component is {@code null}. */
    public GitFileChange {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(originalPath, "originalPath");
    }

    /** What happened to a file. */
    public enum Kind {
        /** Its content changed. */
        MODIFIED,
        /** Its type changed (file, link, submodule). */
        TYPE_CHANGED,
        /** It is new. */
        ADDED,
        /** It was deleted. */
        DELETED,
        /** It was renamed from {@link GitFileChange#originalPath()}. */
        RENAMED,
        /** It was copied from {@link GitFileChange#originalPath()}. */
        COPIED;

        /** The kind for a letter of {@code git status}'s XY field, or {@code null} for {@code .}. */
        static Kind fromStatusLetter(char letter) {
            return switch (letter) {
                case 'M' -> MODIFIED;
                case 'T' -> TYPE_CHANGED;
                case 'A' -> ADDED;
                case 'D' -> DELETED;
                case 'R' -> RENAMED;
                case 'C' -> COPIED;
                default -> null;
            };
        }
    }
}
