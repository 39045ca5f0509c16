package ai.chalk.compute.code;

import ai.chalk.compute.files.FileEntry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The files of a {@link CodeSandbox}, as code_sandboxes' {@code sandbox.files}: read, write, list, upload, download.
 * Where they live is the variant's: the sandbox ({@code chalk}, through {@link ai.chalk.compute.files.SandboxFiles}),
 * the container and the Jupyter server's files ({@code docker}, {@code jupyter}, through the server's contents API),
 * or this machine ({@code eval}). Relative paths are relative to the working directory of the snippets.
 *
 * <pre>{@code
 * sandbox.files().writeText("data/test.txt", "Hello World");
 * String content = sandbox.files().readText("data/test.txt");
 * for (FileEntry f : sandbox.files().list("data")) System.out.println(f.name() + " " + f.size());
 * }</pre>
 *
 * <p>Failures are {@link ai.chalk.compute.files.SandboxFileException}s naming the path (a missing file is
 * {@link ai.chalk.compute.files.FileNotFoundInSandboxException}).
 */
public interface CodeFiles {

    /** Reads a file's bytes, held in memory. */
    byte[] readBytes(String path);

    /** Writes bytes to a file, replacing its content; missing parent directories are created. */
    void writeBytes(String path, byte[] content);

    /** The entries of a directory (not recursive), sorted by name. */
    List<FileEntry> list(String path);

    /** Reads a file as UTF-8 text. */
    default String readText(String path) {
        return new String(readBytes(path), StandardCharsets.UTF_8);
    }

    /** Writes text as UTF-8, replacing the file's content; missing parent directories are created. */
    default void writeText(String path, String content) {
        writeBytes(path, content.getBytes(StandardCharsets.UTF_8));
    }

    /** Copies a local file into the sandbox. */
    default void upload(Path local, String path) {
        try {
            writeBytes(path, Files.readAllBytes(local));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + local, e);
        }
    }

    /** Copies a file of the sandbox to a local file, replacing it. */
    default void download(String path, Path local) {
        byte[] content = readBytes(path);
        try {
            Files.write(local, content);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + local, e);
        }
    }
}
