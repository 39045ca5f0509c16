package ai.chalk.compute.files;

import static ai.chalk.compute.files.FileCommands.shell;
import static ai.chalk.compute.files.FilePaths.arg;
import static ai.chalk.compute.files.FilePaths.baseName;
import static ai.chalk.compute.files.FilePaths.checkPath;
import static ai.chalk.compute.files.FilePaths.parent;
import static ai.chalk.compute.files.FilePaths.quote;

import ai.chalk.compute.sandbox.spi.CommandOutcome;
import ai.chalk.compute.sandbox.spi.ExecTarget;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * The files of a sandbox: read and write them, list directories, look at, create, move and remove
 * files, and stream large files in and out. Get it from {@link ai.chalk.compute.sandbox.Sandbox#files()}.
 *
 * <pre>{@code
 * SandboxFiles files = sandbox.files();
 * files.writeText("/data/test.txt", "Hello World");
 * String content = files.readText("/data/test.txt");
 * for (FileEntry entry : files.list("/data")) {
 *     System.out.println(entry.name() + " " + entry.size());
 * }
 * files.upload(Path.of("model.bin"), "/models/model.bin");
 * files.download("/results/output.csv", Path.of("output.csv"));
 * }</pre>
 *
 * <p>Every operation runs ordinary commands in the sandbox through exec ({@code cat}, {@code find},
 * {@code mkdir}, {@code mv}, {@code rm}, {@code stat} run by {@code sh}), so it works against any
 * Chalk Compute server; the sandbox's image needs a POSIX shell and GNU coreutils and findutils, as
 * Debian and Ubuntu images have. Paths are passed to those commands as arguments, never as shell
 * text, so any file name works — spaces, quotes, newlines, leading dashes — and nothing in a path is
 * expanded ({@code ~} and {@code *} are ordinary characters). Relative paths are relative to the
 * sandbox's working directory. Operations run as the sandbox's user, with its permissions.
 *
 * <p>Failures are {@link SandboxFileException}s naming the path: {@link FileNotFoundInSandboxException},
 * {@link FileAccessDeniedException}, {@link WrongFileTypeException} (a directory where a file is
 * expected, or the reverse). Nothing fails silently: a listing of a missing directory is an
 * exception, not an empty list. Failures of the local side of an upload or download (reading the
 * local file, writing the output stream) are {@link UncheckedIOException}s.
 *
 * <p>{@link #upload(InputStream, String)} and {@link #download(String, OutputStream)} stream through
 * the standard input and output of one command: memory use stays small whatever the file's size.
 * Both check that the number of bytes transferred equals the size of the file in the sandbox.
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class SandboxFiles {

    private final ExecTarget sandbox;
    private final Duration timeout; // null: none
    private final FileCommands commands;
    private final FileTransfer transfer;

    private SandboxFiles(ExecTarget sandbox, Duration timeout) {
        this.sandbox = Objects.requireNonNull(sandbox, "sandbox");
        this.timeout = timeout;
        this.commands = new FileCommands(sandbox, timeout);
        this.transfer = new FileTransfer(commands);
    }

    /**
     * The files of a sandbox, as {@link ai.chalk.compute.sandbox.Sandbox#files()} gives them (the way to get them).
     *
     * @param sandbox where the commands run: a started sandbox
     * @return the files API for it, without a timeout
     */
    public static SandboxFiles of(ExecTarget sandbox) {
        return new SandboxFiles(sandbox, null);
    }

    /**
     * These files with a time limit on each operation: a command that runs longer is killed and the
     * operation throws {@link ai.chalk.compute.sandbox.ExecTimeoutException}. For uploads and
     * downloads the limit covers the whole transfer.
     *
     * @param timeout a positive duration, rounded up to whole seconds
     * @return a new files API for the same sandbox
     */
    public SandboxFiles withTimeout(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        return new SandboxFiles(sandbox, timeout);
    }

    // ---- reading and writing whole files ----

    /**
     * Reads a file as UTF-8 text (malformed bytes become U+FFFD). The whole file is held in memory;
     * use {@link #download(String, OutputStream)} for large files.
     *
     * @param path the file
     * @return its content
     * @throws FileNotFoundInSandboxException when it does not exist
     * @throws FileAccessDeniedException      when it cannot be read
     * @throws WrongFileTypeException         when it is a directory
     */
    public String readText(String path) {
        return readText(path, StandardCharsets.UTF_8);
    }

    /**
     * Reads a file as text in the given character set. The whole file is held in memory.
     *
     * @param path    the file
     * @param charset its encoding
     * @return its content
     * @throws SandboxFileException when it cannot be read, as for {@link #readText(String)}
     */
    public String readText(String path, Charset charset) {
        Objects.requireNonNull(charset, "charset");
        return new String(readBytes(path), charset);
    }

    /**
     * Reads a file's bytes. The whole file is held in memory; use
     * {@link #download(String, OutputStream)} for large files.
     *
     * @param path the file
     * @return its content
     * @throws FileNotFoundInSandboxException when it does not exist
     * @throws FileAccessDeniedException      when it cannot be read
     * @throws WrongFileTypeException         when it is a directory
     */
    public byte[] readBytes(String path) {
        ByteArrayOutputStream content = new ByteArrayOutputStream();
        transfer.download(path, content, "read");
        return content.toByteArray();
    }

    /**
     * Writes text as UTF-8 to a file, replacing its content; creates the file and its missing parent
     * directories. An existing file keeps its permissions, and a symbolic link is followed.
     *
     * @param path the file
     * @param text its new content
     * @throws FileAccessDeniedException when the file or a parent cannot be written (for example on
     *                                   a read-only file system)
     * @throws WrongFileTypeException    when the path is a directory, or a parent is a file
     */
    public void writeText(String path, String text) {
        writeBytes(path, Objects.requireNonNull(text, "text").getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Writes bytes to a file, replacing its content; creates the file and its missing parent
     * directories. An existing file keeps its permissions, and a symbolic link is followed.
     *
     * @param path the file
     * @param data its new content
     * @throws SandboxFileException when it cannot be written, as for {@link #writeText(String, String)}
     */
    public void writeBytes(String path, byte[] data) {
        Objects.requireNonNull(data, "data");
        transfer.upload(new ByteArrayInputStream(data), path, "write");
    }

    // ---- streaming ----

    /**
     * Uploads a local file to the sandbox, streaming it: memory use does not depend on its size.
     * Creates the remote file and its missing parent directories, replacing its content if it exists.
     *
     * @param local  the local file
     * @param remote the path in the sandbox
     * @return the number of bytes uploaded
     * @throws SandboxFileException when the remote file cannot be written (see
     *                              {@link #upload(InputStream, String)})
     * @throws UncheckedIOException when the local file cannot be read
     */
    public long upload(Path local, String remote) {
        Objects.requireNonNull(local, "local");
        checkPath(remote);
        try (InputStream in = Files.newInputStream(local)) {
            return transfer.upload(in, remote, "upload to");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + local + " to upload it to " + quote(remote), e);
        }
    }

    /**
     * Uploads everything an input stream gives to a file in the sandbox, streaming it through the
     * standard input of one command: memory use does not depend on the size. Creates the file and its
     * missing parent directories, replacing its content if it exists. The stream is read to its end
     * but not closed.
     *
     * <p>When the upload fails part way (the stream throws, the sandbox runs out of space), the file
     * in the sandbox may hold part of the data.
     *
     * @param in     the data
     * @param remote the path in the sandbox
     * @return the number of bytes uploaded
     * @throws FileAccessDeniedException when the file or a parent cannot be written
     * @throws WrongFileTypeException    when the path is a directory, or a parent is a file
     * @throws FileTransferException     when the file in the sandbox does not end up with the size sent
     * @throws UncheckedIOException      when reading the stream fails
     */
    public long upload(InputStream in, String remote) {
        Objects.requireNonNull(in, "in");
        return transfer.upload(in, remote, "upload to");
    }

    /**
     * Downloads a file from the sandbox to a local file, streaming it: memory use does not depend on
     * its size. Creates the local file's missing parent directories and replaces the file if it
     * exists; the local file appears only once the whole download has arrived and been checked.
     *
     * @param remote the file in the sandbox
     * @param local  the local file
     * @return the number of bytes downloaded
     * @throws SandboxFileException when the remote file cannot be read (see
     *                              {@link #download(String, OutputStream)})
     * @throws UncheckedIOException when the local file cannot be written
     */
    public long download(String remote, Path local) {
        checkPath(remote);
        return transfer.download(remote, Objects.requireNonNull(local, "local"));
    }

    /**
     * Downloads a file from the sandbox into an output stream, streaming it from the standard output
     * of one command: memory use does not depend on its size. The stream is not closed.
     *
     * @param remote the file in the sandbox
     * @param out    where to write its bytes
     * @return the number of bytes downloaded
     * @throws FileNotFoundInSandboxException when the file does not exist
     * @throws FileAccessDeniedException      when it cannot be read
     * @throws WrongFileTypeException         when it is a directory
     * @throws FileTransferException          when the bytes received differ from the file's size
     * @throws UncheckedIOException           when writing to the output stream fails
     */
    public long download(String remote, OutputStream out) {
        Objects.requireNonNull(out, "out");
        return transfer.download(remote, out, "download");
    }

    // ---- directories and metadata ----

    /**
     * Lists a directory: its files, directories and links, sorted by name, without {@code .} and
     * {@code ..}. A symbolic link to a directory is listed as that directory; the entries themselves
     * describe links as links.
     *
     * @param path the directory
     * @return its entries
     * @throws FileNotFoundInSandboxException when it does not exist
     * @throws FileAccessDeniedException      when it cannot be read
     * @throws WrongFileTypeException         when it is not a directory
     */
    public List<FileEntry> list(String path) {
        String script = "t=$(find -H \"$1\" -maxdepth 0 -printf %Y) || exit\n"
                + "[ \"$t\" = d ] || exit " + FileFailures.EXIT_NOT_A_DIRECTORY + "\n"
                + "exec find -H \"$1\" -mindepth 1 -maxdepth 1 -printf '" + FindOutput.FORMAT + "'";
        CommandOutcome result = commands.run("list", path, shell(script, arg(path)));
        String directory = path.endsWith("/") ? path : path + "/";
        List<FileEntry> entries = FindOutput.entries(result.stdoutBytes(), "list", path, name -> directory + name);
        entries.sort(Comparator.comparing(FileEntry::name));
        return entries;
    }

    /**
     * Describes a file, directory or link. A symbolic link is described itself (see
     * {@link FileEntry#symlinkTarget()}), not followed.
     *
     * @param path the path
     * @return what is there
     * @throws FileNotFoundInSandboxException when nothing is there
     * @throws FileAccessDeniedException      when a parent directory cannot be searched
     */
    public FileEntry stat(String path) {
        CommandOutcome result = commands.run(
                "stat", path, shell("exec find -P \"$1\" -maxdepth 0 -printf '" + FindOutput.FORMAT + "'", arg(path)));
        List<FileEntry> entries = FindOutput.entries(result.stdoutBytes(), "stat", path, name -> path);
        if (entries.size() != 1) {
            throw new SandboxFileException(
                    Status.Code.INTERNAL,
                    "stat",
                    path,
                    "expected one entry from find but got " + entries.size(),
                    result.stderrText());
        }
        FileEntry entry = entries.get(0);
        return new FileEntry(
                baseName(path),
                path,
                entry.type(),
                entry.size(),
                entry.mode(),
                entry.modified(),
                entry.symlinkTarget());
    }

    /**
     * Whether something — a file, directory or link, even a link whose target is missing — is at the
     * path.
     *
     * @param path the path
     * @return {@code true} when it exists; {@code false} when it or a parent does not, or a parent is
     *         not a directory
     * @throws FileAccessDeniedException when a parent directory cannot be searched, so the answer is
     *                                   unknown
     */
    public boolean exists(String path) {
        CommandOutcome result = commands.exec(shell("exec find -P \"$1\" -maxdepth 0 -printf x", arg(path)));
        if (result.success()) {
            return true;
        }
        SandboxFileException failure = FileFailures.failure("check", path, result.exitCode(), result.stderrText());
        if (failure instanceof FileNotFoundInSandboxException || failure instanceof WrongFileTypeException) {
            return false;
        }
        throw failure;
    }

    /**
     * Creates a directory and its missing parents. Does nothing when the directory already exists.
     *
     * @param path the directory
     * @throws FileAccessDeniedException when it cannot be created
     * @throws WrongFileTypeException    when the path or a parent exists and is not a directory
     */
    public void mkdir(String path) {
        commands.run("create directory", path, shell("exec mkdir -p -- \"$1\"", arg(path)));
    }

    /**
     * Removes a file, a symbolic link (not its target) or an empty directory.
     *
     * @param path the path
     * @throws FileNotFoundInSandboxException when nothing is there
     * @throws SandboxFileException           when it is a directory that is not empty
     *                                        (use {@link #remove(String, boolean)})
     * @throws FileAccessDeniedException      when it cannot be removed
     */
    public void remove(String path) {
        remove(path, false);
    }

    /**
     * Removes a file, a symbolic link (not its target) or a directory; with {@code recursive}, a
     * directory is removed with everything in it.
     *
     * @param path      the path
     * @param recursive whether to remove a directory's content too
     * @throws FileNotFoundInSandboxException when nothing is there
     * @throws SandboxFileException           when it is a directory that is not empty and
     *                                        {@code recursive} is false
     * @throws FileAccessDeniedException      when it (or something in it) cannot be removed
     */
    public void remove(String path, boolean recursive) {
        String script = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit " + FileFailures.EXIT_NOT_FOUND + "\n"
                + (recursive
                        ? "exec rm -rf -- \"$1\""
                        : "if [ -d \"$1\" ] && [ ! -L \"$1\" ]; then exec rmdir -- \"$1\"; "
                                + "else exec rm -f -- \"$1\"; fi");
        commands.run("remove", path, shell(script, arg(path)));
    }

    /**
     * Moves or renames a file, link or directory to exactly the target path, creating the target's
     * missing parent directories. An existing target file is replaced; an existing target directory
     * is replaced only when empty (the source is not moved <em>into</em> it).
     *
     * @param from the path to move
     * @param to   its new path
     * @throws FileNotFoundInSandboxException when {@code from} does not exist
     * @throws FileAccessDeniedException      when the move is not permitted
     * @throws WrongFileTypeException         when the target is a directory and the source is not
     *                                        (or the reverse)
     */
    public void move(String from, String to) {
        checkPath(to);
        String script = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit " + FileFailures.EXIT_NOT_FOUND + "\n"
                + "mkdir -p -- \"$3\" || exit\n"
                + "exec mv -f -T -- \"$1\" \"$2\"";
        CommandOutcome result = commands.exec(shell(script, arg(from), arg(to), parent(arg(to))));
        if (!result.success()) {
            SandboxFileException failure = FileFailures.failure("move", from, result.exitCode(), result.stderrText());
            if (failure instanceof FileNotFoundInSandboxException) {
                throw failure;
            }
            throw FileFailures.withReason(failure, failure.reason() + " (moving it to " + quote(to) + ")");
        }
    }

    @Override
    public String toString() {
        return "SandboxFiles[" + sandbox + (timeout == null ? "" : ", timeout=" + timeout) + "]";
    }
}
