package ai.chalk.compute.files;

/** What kind of file a {@link FileEntry} describes. */
public enum FileType {
    /** A regular file. */
    FILE,
    /** A directory. */
    DIRECTORY,
    /** A symbolic link; {@link FileEntry} describes the link itself, not its target. */
    SYMLINK,
    /** Anything else: a named pipe, a socket, a device. */
    OTHER;

    /** The type for a {@code find -printf %y} letter. */
    static FileType fromFindLetter(String letter) {
        return switch (letter) {
            case "f" -> FILE;
            case "d" -> DIRECTORY;
            case "l" -> SYMLINK;
            default -> OTHER;
        };
    }
}
