package ai.chalk.compute.image;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * What an {@link Image} reads from the local disk when a step is added: files and directories to copy, a Dockerfile to
 * inline, a requirements file. Everything is read at once, so later changes on disk do not change the image, and
 * what the server could not build (a build context, pip options) is refused here, naming the file.
 */
final class LocalSources {

    /** A Dockerfile as an image takes it: the base image of its {@code FROM} and its other instructions. */
    record Dockerfile(String baseImage, List<String> instructions) {}

    /** A regular file under a directory being copied, with its path relative to that directory. */
    record DirectoryFile(Path file, String relativePath, int mode) {}

    private LocalSources() {}

    static byte[] read(Path source) {
        try {
            return Files.readAllBytes(source);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + source + " to add it to the image", e);
        }
    }

    /** Reads a Dockerfile: line continuations joined, comments dropped, one {@code FROM} and no build context. */
    static Dockerfile dockerfile(Path dockerfile) {
        String text = new String(read(dockerfile), StandardCharsets.UTF_8);
        List<String> instructions = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String raw : text.split("\\R", -1)) {
            String line = raw.strip();
            if (current.length() == 0 && (line.isEmpty() || line.startsWith("#"))) {
                continue;
            }
            if (line.endsWith("\\")) {
                current.append(line, 0, line.length() - 1).append(' ');
                continue;
            }
            current.append(line);
            instructions.add(current.toString().strip());
            current.setLength(0);
        }
        if (current.length() > 0) {
            instructions.add(current.toString().strip());
        }
        String base = null;
        List<String> rest = new ArrayList<>();
        for (String instruction : instructions) {
            String keyword = instruction.split("\\s+", 2)[0].toUpperCase(Locale.ROOT);
            if (keyword.equals("FROM")) {
                if (base != null) {
                    throw new IllegalArgumentException(dockerfile + " has more than one FROM: multi-stage builds"
                            + " cannot be inlined; build the image and use Image.base(name)");
                }
                String[] parts = instruction.split("\\s+");
                base = Arrays.stream(parts)
                        .skip(1)
                        .filter(p -> !p.startsWith("--"))
                        .findFirst()
                        .orElseThrow(() -> new IllegalArgumentException(dockerfile + ": FROM names no image"));
            } else if (base == null) {
                if (!keyword.equals("ARG")) {
                    throw new IllegalArgumentException(dockerfile + ": " + keyword + " before FROM");
                }
                rest.add(instruction);
            } else if ((keyword.equals("COPY") || keyword.equals("ADD")) && !instruction.contains("--from=")) {
                throw new IllegalArgumentException(dockerfile + ": \"" + instruction + "\" copies from the build"
                        + " context, which is not sent; use addLocalFile or addLocalDir instead");
            } else {
                rest.add(instruction);
            }
        }
        if (base == null) {
            throw new IllegalArgumentException(dockerfile + " has no FROM instruction");
        }
        return new Dockerfile(base, List.copyOf(rest));
    }

    /** The packages a requirements file lists; comments and blank lines skipped, pip options refused. */
    static List<String> requirements(Path requirements) {
        List<String> packages = new ArrayList<>();
        for (String raw : new String(read(requirements), StandardCharsets.UTF_8).split("\\R")) {
            String line = raw.replaceFirst("\\s+#.*$", "").strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            if (line.startsWith("-")) {
                throw new IllegalArgumentException(requirements + ": pip option \"" + line + "\" is not supported;"
                        + " list packages only, or use runCommands with pip");
            }
            packages.add(line);
        }
        if (packages.isEmpty()) {
            throw new IllegalArgumentException(requirements + " lists no packages");
        }
        return packages;
    }

    /**
     * The regular files under a directory, in path order (so an image's content hash does not depend on the file
     * system's listing order), each with its permission bits; symbolic links are not followed.
     */
    static List<DirectoryFile> directory(Path source) {
        if (!Files.isDirectory(source)) {
            throw new IllegalArgumentException(source + " is not a directory");
        }
        List<Path> files;
        try (var walk = Files.walk(source)) {
            files = walk.filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + source, e);
        }
        List<DirectoryFile> result = new ArrayList<>(files.size());
        for (Path file : files) {
            String relative = source.relativize(file).toString().replace(File.separatorChar, '/');
            int mode;
            try {
                mode = posixMode(Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS));
            } catch (IOException | UnsupportedOperationException e) {
                mode = 0644; // a file system without POSIX permissions: what a new file gets
            }
            result.add(new DirectoryFile(file, relative, mode));
        }
        return result;
    }

    private static int posixMode(Set<PosixFilePermission> permissions) {
        int mode = 0;
        for (PosixFilePermission p : permissions) {
            mode |= 1 << (8 - p.ordinal());
        }
        return mode;
    }
}
