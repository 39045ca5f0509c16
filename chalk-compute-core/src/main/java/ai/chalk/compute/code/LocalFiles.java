package ai.chalk.compute.code;

import ai.chalk.compute.files.FileAccessDeniedException;
import ai.chalk.compute.files.FileEntry;
import ai.chalk.compute.files.FileNotFoundInSandboxException;
import ai.chalk.compute.files.FileType;
import ai.chalk.compute.files.SandboxFileException;
import ai.chalk.compute.files.WrongFileTypeException;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The {@code eval} variant's files: this machine's, with relative paths under the working directory. Nothing is
 * fenced off, as nothing is in that variant.
 */
final class LocalFiles implements CodeFiles {

    private final Path workdir;

    LocalFiles(Path workdir) {
        this.workdir = workdir;
    }

    private Path resolve(String path) {
        return workdir.resolve(path);
    }

    @Override
    public byte[] readBytes(String path) {
        Path file = resolve(path);
        if (Files.isDirectory(file)) {
            throw new WrongFileTypeException("read", path, "is a directory", "");
        }
        try {
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw failure("read", path, e);
        }
    }

    @Override
    public void writeBytes(String path, byte[] content) {
        Path file = resolve(path);
        try {
            if (file.getParent() != null) {
                Files.createDirectories(file.getParent());
            }
            Files.write(file, content);
        } catch (IOException e) {
            throw failure("write", path, e);
        }
    }

    @Override
    public List<FileEntry> list(String path) {
        Path dir = resolve(path);
        if (Files.exists(dir) && !Files.isDirectory(dir)) {
            throw new WrongFileTypeException("list", path, "is not a directory", "");
        }
        List<FileEntry> entries = new ArrayList<>();
        try (Stream<Path> children = Files.list(dir)) {
            for (Path child : (Iterable<Path>) children::iterator) {
                entries.add(entry(child));
            }
        } catch (IOException e) {
            throw failure("list", path, e);
        }
        entries.sort(Comparator.comparing(FileEntry::name));
        return entries;
    }

    private static FileEntry entry(Path p) throws IOException {
        PosixFileAttributes a = Files.readAttributes(p, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        FileType type = a.isSymbolicLink()
                ? FileType.SYMLINK
                : a.isDirectory() ? FileType.DIRECTORY : a.isRegularFile() ? FileType.FILE : FileType.OTHER;
        int mode = 0;
        for (PosixFilePermission permission : a.permissions()) {
            mode |= 1 << (8 - permission.ordinal()); // OWNER_READ is 0400, ..., OTHERS_EXECUTE 0001
        }
        return new FileEntry(
                p.getFileName().toString(),
                p.toAbsolutePath().toString(),
                type,
                a.size(),
                mode,
                a.lastModifiedTime().toInstant(),
                a.isSymbolicLink() ? Optional.of(Files.readSymbolicLink(p).toString()) : Optional.empty());
    }

    private static SandboxFileException failure(String operation, String path, IOException e) {
        if (e instanceof NoSuchFileException) {
            return new FileNotFoundInSandboxException(operation, path, "");
        }
        if (e instanceof AccessDeniedException) {
            return new FileAccessDeniedException(operation, path, "permission denied", "");
        }
        if (e instanceof NotDirectoryException) {
            return new WrongFileTypeException(operation, path, "a parent is not a directory", "");
        }
        return new SandboxFileException(Status.Code.INTERNAL, operation, path, String.valueOf(e.getMessage()), "");
    }
}
