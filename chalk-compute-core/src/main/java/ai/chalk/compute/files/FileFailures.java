package ai.chalk.compute.files;

import io.grpc.Status;

/**
 * Turns a command that failed in the sandbox into the exception the user sees: by the exit codes of the scripts' own
 * checks, else by the system's error text (the commands run with {@code LC_ALL=C}, so the text is English).
 */
final class FileFailures {

    // exit codes of our own checks in the scripts (the tools themselves exit with 1 or 2)
    static final int EXIT_NOT_A_DIRECTORY = 20;
    static final int EXIT_IS_A_DIRECTORY = 21;
    static final int EXIT_NOT_FOUND = 22;

    private FileFailures() {}

    /** The exception for a command that failed, classified by our exit codes and the system's error text. */
    static SandboxFileException failure(String operation, String path, int exitCode, String stderr) {
        String err = stderr == null ? "" : stderr;
        if (exitCode == EXIT_NOT_A_DIRECTORY) {
            return new WrongFileTypeException(operation, path, "it is not a directory", err);
        }
        if (exitCode == EXIT_IS_A_DIRECTORY) {
            return new WrongFileTypeException(operation, path, "it is a directory", err);
        }
        if (exitCode == EXIT_NOT_FOUND || err.contains("No such file or directory")) {
            return new FileNotFoundInSandboxException(operation, path, err);
        }
        if (err.contains("Permission denied")) {
            return new FileAccessDeniedException(operation, path, "permission denied", err);
        }
        if (err.contains("Operation not permitted")) {
            return new FileAccessDeniedException(operation, path, "operation not permitted", err);
        }
        if (err.contains("Read-only file system")) {
            return new FileAccessDeniedException(operation, path, "read-only file system", err);
        }
        if (err.contains("Is a directory") || err.contains("cannot overwrite directory")) {
            return new WrongFileTypeException(operation, path, "it is a directory", err);
        }
        if (err.contains("cannot overwrite non-directory")) {
            return new WrongFileTypeException(operation, path, "the target exists and is not a directory", err);
        }
        if (err.contains("Not a directory")) {
            return new WrongFileTypeException(operation, path, "a component of the path is not a directory", err);
        }
        if (err.contains("File exists")) {
            return new WrongFileTypeException(operation, path, "it exists and is not a directory", err);
        }
        if (err.contains("Directory not empty")) {
            return new SandboxFileException(
                    Status.Code.FAILED_PRECONDITION, operation, path, "the directory is not empty", err);
        }
        if (err.contains("No space left on device")
                || err.contains("Disk quota exceeded")
                || err.contains("File too large")) {
            return new SandboxFileException(
                    Status.Code.RESOURCE_EXHAUSTED,
                    operation,
                    path,
                    err.contains("No space")
                            ? "no space left on device"
                            : err.contains("quota") ? "disk quota exceeded" : "file too large",
                    err);
        }
        if (exitCode == 127
                || err.contains("unknown predicate")
                || err.contains("invalid predicate")
                || err.contains("unrecognized option")
                || err.contains("invalid option")) {
            return new SandboxFileException(
                    Status.Code.FAILED_PRECONDITION,
                    operation,
                    path,
                    "the sandbox's image lacks a tool the files API needs (a POSIX shell, GNU coreutils and "
                            + "findutils): " + firstLine(err),
                    err);
        }
        return new SandboxFileException(
                Status.Code.UNKNOWN,
                operation,
                path,
                "the command in the sandbox failed with exit code " + exitCode
                        + (err.isBlank() ? "" : ": " + firstLine(err)),
                err);
    }

    /** The same kind of exception with another reason. */
    static SandboxFileException withReason(SandboxFileException e, String reason) {
        if (e instanceof FileAccessDeniedException) {
            return new FileAccessDeniedException(e.operation(), e.path(), reason, e.stderr());
        }
        if (e instanceof WrongFileTypeException) {
            return new WrongFileTypeException(e.operation(), e.path(), reason, e.stderr());
        }
        return new SandboxFileException(e.statusCode(), e.operation(), e.path(), reason, e.stderr());
    }

    private static String firstLine(String text) {
        String trimmed = text.strip();
        int newline = trimmed.indexOf('\n');
        return newline < 0 ? trimmed : trimmed.substring(0, newline);
    }
}
