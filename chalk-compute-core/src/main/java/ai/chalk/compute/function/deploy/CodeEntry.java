package ai.chalk.compute.function.deploy;

import java.nio.file.Path;
import java.util.Objects;

/**
 * One class path entry of a {@link CodeSnapshot}, as one blob.
 *
 * @param name   its name in the manifest: 3-digit position and file name, such as {@code 000-classes.zip}
 * @param kind   a jar, or a directory archived as a deterministic zip
 * @param digest {@code sha256:} and the hex digest of the blob's bytes
 * @param size   the blob's size in bytes
 * @param blob   the file holding the blob's bytes: the jar itself, or the directory's zip (or, for what a Spring
 *               Boot executable jar holds, the zip of its classes or a library copied out of it)
 * @param source the class path entry it was made from: the directory, the jar, or the executable jar
 */
public record CodeEntry(String name, Kind kind, String digest, long size, Path blob, Path source) {

    /** What a class path entry was. */
    public enum Kind {
        /** A jar file, uploaded as it is. */
        JAR,
        /** A directory of classes and resources, uploaded as a deterministic zip. */
        DIR;

        /** The kind as the manifest writes it: {@code jar} or {@code dir}. */
        public String manifestName() {
            return this == JAR ? "jar" : "dir";
        }
    }

    /** Checks for nulls. */
    public CodeEntry {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(digest, "digest");
        Objects.requireNonNull(blob, "blob");
        Objects.requireNonNull(source, "source");
    }
}
