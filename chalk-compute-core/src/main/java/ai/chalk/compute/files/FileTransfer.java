package ai.chalk.compute.files;

import static ai.chalk.compute.files.FilePaths.arg;
import static ai.chalk.compute.files.FilePaths.parent;
import static ai.chalk.compute.files.FilePaths.quote;

import ai.chalk.compute.sandbox.spi.CommandOutcome;
import ai.chalk.compute.sandbox.spi.RunningCommand;
import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.OptionalInt;

/**
 * Moves a file's bytes in or out of a sandbox through the standard input or output of one command, a chunk at a
 * time, so memory use does not depend on the file's size; and checks that the bytes moved equal the size of the file
 * in the sandbox.
 */
final class FileTransfer {

    /** Bytes read from an upload's source and sent to the sandbox at a time. */
    static final int CHUNK = 256 * 1024;
    /** At most this much of a command's standard error is kept for error messages. */
    private static final int STDERR_LIMIT = 64 * 1024;
    /** The line a download's command writes to stderr with the size of the file it sends. */
    private static final String SIZE_MARKER = "chalk-files-size:";

    private final FileCommands commands;

    FileTransfer(FileCommands commands) {
        this.commands = commands;
    }

    /**
     * Writes everything {@code in} gives to the file at {@code remote}, creating its parent directories.
     *
     * @param operation what the user asked for, for messages ("write", "upload to")
     */
    long upload(InputStream in, String remote, String operation) {
        String target = arg(remote);
        String script = "mkdir -p -- \"$2\" || exit\n"
                + "[ -d \"$1\" ] && exit " + FileFailures.EXIT_IS_A_DIRECTORY + "\n"
                + "cat > \"$1\" || exit\n"
                + "if [ -f \"$1\" ]; then exec stat -L -c %s -- \"$1\"; fi";
        long sent = 0;
        boolean readerStopped = false;
        try (RunningCommand process = commands.start(FileCommands.shell(script, target, parent(target)))) {
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
            CommandOutcome result = process.waitFor();
            if (!result.success()) {
                throw FileFailures.failure(operation, remote, result.exitCode(), result.stderrText());
            }
            if (readerStopped) {
                throw new SandboxFileException(
                        Status.Code.ABORTED,
                        operation,
                        remote,
                        "the command writing the file in the sandbox stopped reading after " + sent + " bytes",
                        result.stderrText());
            }
            String size = result.stdoutText().trim();
            if (!size.isEmpty()) {
                long written = parseSize(size, operation, remote);
                if (written != sent) {
                    throw new FileTransferException(operation, remote, sent, written);
                }
            }
            return sent;
        }
    }

    /**
     * Downloads into a local file that appears only once the whole download has arrived and been checked: the bytes
     * go to a temporary file next to it, moved into place at the end.
     */
    long download(String remote, Path local) {
        Path target = local.toAbsolutePath();
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
     * Writes the bytes of the file at {@code remote} to {@code out}.
     *
     * @param operation what the user asked for, for messages ("read", "download")
     */
    long download(String remote, OutputStream out, String operation) {
        String script = "[ -d \"$1\" ] && exit " + FileFailures.EXIT_IS_A_DIRECTORY + "\n"
                + "if [ -f \"$1\" ]; then s=$(stat -L -c %s -- \"$1\") || exit; printf '" + SIZE_MARKER
                + "%s\\n' \"$s\" >&2; fi\n"
                + "exec cat -- \"$1\"";
        long[] received = {0};
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        OptionalInt exit = commands.stream(
                FileCommands.shell(script, arg(remote)),
                data -> {
                    try {
                        out.write(data);
                    } catch (IOException e) {
                        throw new UncheckedIOException(
                                "cannot write the bytes of " + quote(remote) + " after " + received[0] + " bytes", e);
                    }
                    received[0] += data.length;
                },
                data -> stderr.write(data, 0, Math.max(0, Math.min(data.length, STDERR_LIMIT - stderr.size()))));
        if (exit.isEmpty()) {
            throw new SandboxFileException(
                    Status.Code.INTERNAL,
                    operation,
                    remote,
                    "the command ended without reporting how",
                    stderr.toString(StandardCharsets.UTF_8));
        }
        long expected = -1;
        StringBuilder messages = new StringBuilder();
        for (String line : stderr.toString(StandardCharsets.UTF_8).split("\n", -1)) {
            if (line.startsWith(SIZE_MARKER)) {
                expected = parseSize(line.substring(SIZE_MARKER.length()).trim(), operation, remote);
            } else if (!line.isEmpty()) {
                messages.append(line).append('\n');
            }
        }
        if (exit.getAsInt() != 0) {
            throw FileFailures.failure(operation, remote, exit.getAsInt(), messages.toString());
        }
        if (expected >= 0 && expected != received[0]) {
            throw new FileTransferException(operation, remote, received[0], expected);
        }
        return received[0];
    }

    private static long parseSize(String text, String operation, String path) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new SandboxFileException(
                    Status.Code.INTERNAL, operation, path, "unexpected file size reported by the sandbox: " + text, "");
        }
    }
}
