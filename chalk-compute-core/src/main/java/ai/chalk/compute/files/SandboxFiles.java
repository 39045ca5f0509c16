package ai.chalk.compute.files;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecProcess;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.Sandbox;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * The files of a sandbox: read and write them, list directories, look at, create, move and remove
 * files, and stream large files in and out. Get it from {@link Sandbox#files()}.
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

    /** Bytes read from an upload's source and sent to the sandbox at a time. */
    static final int CHUNK = 256 * 1024;
    /** At most this much of a command's standard error is kept for error messages. */
    private static final int STDERR_LIMIT = 64 * 1024;
    /** The line a download's command writes to stderr with the size of the file it sends. */
    private static final String SIZE_MARKER = "chalk-files-size:";
    /** The fields printed for each file, each ended by NUL: type, size, mode, mtime, link target, name. */
    private static final String FIND_FORMAT = "%y\\0%s\\0%m\\0%T@\\0%l\\0%f\\0";
    private static final int FIND_FIELDS = 6;

    // exit codes of our own checks in the scripts (the tools themselves exit with 1 or 2)
    private static final int EXIT_NOT_A_DIRECTORY = 20;
    private static final int EXIT_IS_A_DIRECTORY = 21;
    private static final int EXIT_NOT_FOUND = 22;

    private final Sandbox sandbox;
    private final Duration timeout;

    private SandboxFiles(Sandbox sandbox, Duration timeout) {
        this.sandbox = Objects.requireNonNull(sandbox, "sandbox");
        this.timeout = timeout;
    }

    /**
     * The files of a sandbox; the same as {@link Sandbox#files()}.
     *
     * @param sandbox a started sandbox
     * @return the files API for it, without a timeout
     */
    public static SandboxFiles of(Sandbox sandbox) {
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
        download(path, content, "read");
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
        upload(new ByteArrayInputStream(data), path, "write");
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
            return upload(in, remote, "upload to");
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
        return upload(in, remote, "upload to");
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
        Path target = Objects.requireNonNull(local, "local").toAbsolutePath();
        Path directory = target.getParent();
        Path partial = null;
        try {
            Files.createDirectories(directory);
            partial = Files.createTempFile(directory, ".chalk-download-", ".part");
            long bytes;
            try (OutputStream out = Files.newOutputStream(partial)) {
                bytes = download(remote, out, "download");
            }
            try {
                Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING);
            }
            partial = null;
            return bytes;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + local + " to download " + quote(remote) + " into it", e);
        } finally {
            if (partial != null) {
                try {
                    Files.deleteIfExists(partial);
                } catch (IOException ignored) {
                    // best effort: the download already failed
                }
            }
        }
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
        return download(remote, out, "download");
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
                + "[ \"$t\" = d ] || exit " + EXIT_NOT_A_DIRECTORY + "\n"
                + "exec find -H \"$1\" -mindepth 1 -maxdepth 1 -printf '" + FIND_FORMAT + "'";
        ExecResult result = run("list", path, shell(script, arg(path)));
        String directory = path.endsWith("/") ? path : path + "/";
        List<FileEntry> entries = parseEntries(result.stdoutBytes(), "list", path,
                name -> directory + name);
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
        ExecResult result = run("stat", path,
                shell("exec find -P \"$1\" -maxdepth 0 -printf '" + FIND_FORMAT + "'", arg(path)));
        List<FileEntry> entries = parseEntries(result.stdoutBytes(), "stat", path, name -> path);
        if (entries.size() != 1) {
            throw new SandboxFileException(Status.Code.INTERNAL, "stat", path,
                    "expected one entry from find but got " + entries.size(), result.stderrText());
        }
        FileEntry entry = entries.get(0);
        return new FileEntry(baseName(path), path, entry.type(), entry.size(), entry.mode(), entry.modified(),
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
        ExecResult result = exec(shell("exec find -P \"$1\" -maxdepth 0 -printf x", arg(path)));
        if (result.success()) {
            return true;
        }
        SandboxFileException failure = failure("check", path, result.exitCode(), result.stderrText());
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
        run("create directory", path, shell("exec mkdir -p -- \"$1\"", arg(path)));
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
        String script = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit " + EXIT_NOT_FOUND + "\n"
                + (recursive
                        ? "exec rm -rf -- \"$1\""
                        : "if [ -d \"$1\" ] && [ ! -L \"$1\" ]; then exec rmdir -- \"$1\"; else exec rm -f -- \"$1\"; fi");
        run("remove", path, shell(script, arg(path)));
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
        String script = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit " + EXIT_NOT_FOUND + "\n"
                + "mkdir -p -- \"$3\" || exit\n"
                + "exec mv -f -T -- \"$1\" \"$2\"";
        ExecResult result = exec(shell(script, arg(from), arg(to), parent(arg(to))));
        if (!result.success()) {
            SandboxFileException failure = failure("move", from, result.exitCode(), result.stderrText());
            if (failure instanceof FileNotFoundInSandboxException) {
                throw failure;
            }
            throw rebuild(failure, failure.reason() + " (moving it to " + quote(to) + ")");
        }
    }

    // ---- implementation ----

    private long upload(InputStream in, String remote, String operation) {
        String target = arg(remote);
        String script = "mkdir -p -- \"$2\" || exit\n"
                + "[ -d \"$1\" ] && exit " + EXIT_IS_A_DIRECTORY + "\n"
                + "cat > \"$1\" || exit\n"
                + "if [ -f \"$1\" ]; then exec stat -L -c %s -- \"$1\"; fi";
        long sent = 0;
        boolean readerStopped = false;
        try (ExecProcess process = sandbox.execStart(command(shell(script, target, parent(target))))) {
            byte[] buffer = new byte[CHUNK];
            while (true) {
                int n;
                try {
                    n = in.readNBytes(buffer, 0, CHUNK);
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot read the data to " + operation + " " + quote(remote), e);
                }
                if (n == 0) {
                    break;
                }
                try {
                    // writeStdin copies the bytes before it returns, so the buffer can be reused
                    process.writeStdin(n == CHUNK ? buffer : Arrays.copyOf(buffer, n));
                } catch (IllegalStateException e) {
                    // the command exited early (it could not create the file); its result says why
                    readerStopped = true;
                    break;
                }
                sent += n;
                if (n < CHUNK) {
                    break;
                }
            }
            process.closeStdin();
            ExecResult result = process.waitFor();
            if (!result.success()) {
                throw failure(operation, remote, result.exitCode(), result.stderrText());
            }
            if (readerStopped) {
                throw new SandboxFileException(Status.Code.ABORTED, operation, remote,
                        "the command writing the file in the sandbox stopped reading after " + sent + " bytes",
                        result.stderrText());
            }
            String size = result.stdoutText().trim();
            if (!size.isEmpty()) {
                long written = parseLong(size, operation, remote);
                if (written != sent) {
                    throw new FileTransferException(operation, remote, sent, written);
                }
            }
            return sent;
        }
    }

    private long download(String remote, OutputStream out, String operation) {
        String script = "[ -d \"$1\" ] && exit " + EXIT_IS_A_DIRECTORY + "\n"
                + "if [ -f \"$1\" ]; then s=$(stat -L -c %s -- \"$1\") || exit; printf '" + SIZE_MARKER
                + "%s\\n' \"$s\" >&2; fi\n"
                + "exec cat -- \"$1\"";
        long received = 0;
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        ExecEvent.Exited exit = null;
        try (ExecStream events = sandbox.execStream(command(shell(script, arg(remote))))) {
            for (ExecEvent event : events) {
                if (event instanceof ExecEvent.Stdout stdout) {
                    byte[] data = stdout.data();
                    try {
                        out.write(data);
                    } catch (IOException e) {
                        throw new UncheckedIOException("cannot write the bytes of " + quote(remote) + " after "
                                + received + " bytes", e);
                    }
                    received += data.length;
                } else if (event instanceof ExecEvent.Stderr err) {
                    byte[] data = err.data();
                    stderr.write(data, 0, Math.max(0, Math.min(data.length, STDERR_LIMIT - stderr.size())));
                } else if (event instanceof ExecEvent.Exited exited) {
                    exit = exited;
                }
            }
        }
        if (exit == null) {
            throw new SandboxFileException(Status.Code.INTERNAL, operation, remote,
                    "the command ended without reporting how", stderr.toString(StandardCharsets.UTF_8));
        }
        long expected = -1;
        StringBuilder messages = new StringBuilder();
        for (String line : stderr.toString(StandardCharsets.UTF_8).split("\n", -1)) {
            if (line.startsWith(SIZE_MARKER)) {
                expected = parseLong(line.substring(SIZE_MARKER.length()).trim(), operation, remote);
            } else if (!line.isEmpty()) {
                messages.append(line).append('\n');
            }
        }
        if (exit.status() != 0) {
            throw failure(operation, remote, exit.status(), messages.toString());
        }
        if (expected >= 0 && expected != received) {
            throw new FileTransferException(operation, remote, received, expected);
        }
        return received;
    }

    private List<FileEntry> parseEntries(byte[] output, String operation, String path,
                                         UnaryOperator<String> pathOf) {
        List<String> fields = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < output.length; i++) {
            if (output[i] == 0) {
                fields.add(new String(output, start, i - start, StandardCharsets.UTF_8));
                start = i + 1;
            }
        }
        if (start != output.length || fields.size() % FIND_FIELDS != 0) {
            throw new SandboxFileException(Status.Code.INTERNAL, operation, path,
                    "unexpected output from find (" + output.length + " bytes, " + fields.size() + " fields)", "");
        }
        List<FileEntry> entries = new ArrayList<>(fields.size() / FIND_FIELDS);
        for (int i = 0; i < fields.size(); i += FIND_FIELDS) {
            String name = fields.get(i + 5);
            String link = fields.get(i + 4);
            try {
                FileType type = FileType.fromFindLetter(fields.get(i));
                entries.add(new FileEntry(name, pathOf.apply(name), type, Long.parseLong(fields.get(i + 1)),
                        Integer.parseInt(fields.get(i + 2), 8), parseTime(fields.get(i + 3)),
                        type == FileType.SYMLINK ? Optional.of(link) : Optional.empty()));
            } catch (NumberFormatException | ArithmeticException e) {
                throw new SandboxFileException(Status.Code.INTERNAL, operation, path,
                        "unexpected output from find for " + quote(name) + ": " + e.getMessage(), "");
            }
        }
        return entries;
    }

    /** Parses {@code find}'s {@code %T@}: seconds since the epoch with a fraction. */
    static Instant parseTime(String secondsWithFraction) {
        BigDecimal value = new BigDecimal(secondsWithFraction);
        BigDecimal seconds = value.setScale(0, RoundingMode.FLOOR);
        long nanos = value.subtract(seconds).movePointRight(9).setScale(0, RoundingMode.DOWN).longValueExact();
        return Instant.ofEpochSecond(seconds.longValueExact(), nanos);
    }

    private static long parseLong(String text, String operation, String path) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new SandboxFileException(Status.Code.INTERNAL, operation, path,
                    "unexpected file size reported by the sandbox: " + text, "");
        }
    }

    /** Runs a command and turns a failure into the matching exception. */
    private ExecResult run(String operation, String path, Command command) {
        ExecResult result = exec(command);
        if (!result.success()) {
            throw failure(operation, path, result.exitCode(), result.stderrText());
        }
        return result;
    }

    private ExecResult exec(Command command) {
        return sandbox.exec(command(command));
    }

    /** Our options on every command: messages in English (they are classified), and the timeout. */
    private Command command(Command command) {
        Command c = command.env("LC_ALL", "C");
        return timeout == null ? c : c.timeout(timeout);
    }

    private static Command shell(String script, String... args) {
        List<String> argv = new ArrayList<>(args.length + 3);
        argv.add("-c");
        argv.add(script);
        argv.add("sh");
        argv.addAll(Arrays.asList(args));
        return Command.of("sh", argv);
    }

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
            return new SandboxFileException(Status.Code.FAILED_PRECONDITION, operation, path,
                    "the directory is not empty", err);
        }
        if (err.contains("No space left on device") || err.contains("Disk quota exceeded")
                || err.contains("File too large")) {
            return new SandboxFileException(Status.Code.RESOURCE_EXHAUSTED, operation, path,
                    err.contains("No space") ? "no space left on device"
                            : err.contains("quota") ? "disk quota exceeded" : "file too large", err);
        }
        if (exitCode == 127 || err.contains("unknown predicate") || err.contains("invalid predicate")
                || err.contains("unrecognized option") || err.contains("invalid option")) {
            return new SandboxFileException(Status.Code.FAILED_PRECONDITION, operation, path,
                    "the sandbox's image lacks a tool the files API needs (a POSIX shell, GNU coreutils and "
                            + "findutils): " + firstLine(err), err);
        }
        return new SandboxFileException(Status.Code.UNKNOWN, operation, path,
                "the command in the sandbox failed with exit code " + exitCode
                        + (err.isBlank() ? "" : ": " + firstLine(err)), err);
    }

    private static SandboxFileException rebuild(SandboxFileException e, String reason) {
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

    private static void checkPath(String path) {
        Objects.requireNonNull(path, "path");
        if (path.isEmpty()) {
            throw new IllegalArgumentException("the path must not be empty");
        }
        if (path.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("a path cannot contain NUL: " + quote(path));
        }
    }

    /**
     * The path as passed to commands: relative paths get {@code ./} in front, so that no command
     * takes a name starting with {@code -} (or {@code find} a name like {@code !}) for an option.
     */
    static String arg(String path) {
        checkPath(path);
        return path.startsWith("/") ? path : "./" + path;
    }

    /** The parent directory of a path as {@link #arg} returns it. */
    static String parent(String argPath) {
        String p = argPath;
        while (p.length() > 1 && p.endsWith("/")) {
            p = p.substring(0, p.length() - 1);
        }
        int slash = p.lastIndexOf('/');
        if (slash < 0) {
            return ".";
        }
        return slash == 0 ? "/" : p.substring(0, slash);
    }

    /** The last component of a path, {@code /} for the root. */
    static String baseName(String path) {
        String p = path;
        while (p.length() > 1 && p.endsWith("/")) {
            p = p.substring(0, p.length() - 1);
        }
        if (p.equals("/")) {
            return "/";
        }
        int slash = p.lastIndexOf('/');
        return slash < 0 ? p : p.substring(slash + 1);
    }

    /** A path in quotes for messages, with control characters escaped so a name with a newline stays readable. */
    static String quote(String path) {
        StringBuilder s = new StringBuilder("'");
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            switch (c) {
                case '\n' -> s.append("\\n");
                case '\t' -> s.append("\\t");
                case '\r' -> s.append("\\r");
                case '\\' -> s.append("\\\\");
                case '\'' -> s.append("\\'");
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        s.append(String.format("\\u%04x", (int) c));
                    } else {
                        s.append(c);
                    }
                }
            }
        }
        return s.append('\'').toString();
    }

    @Override
    public String toString() {
        return "SandboxFiles[" + sandbox + (timeout == null ? "" : ", timeout=" + timeout) + "]";
    }
}
