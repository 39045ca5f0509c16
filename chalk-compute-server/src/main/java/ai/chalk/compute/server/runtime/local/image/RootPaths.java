package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;

/**
 * Paths inside a sandbox's or an image's root, seen from the host: resolved with every symlink taken relative to
 * that root, and made real directories where the runtime is about to work on them as root.
 */
public final class RootPaths {

    private static final int MAX_LINKS = 40;

    private RootPaths() {}

    /** Makes every path of {@code dirs} a real directory and every path of {@code files} a regular file. */
    public static void prepare(Path root, List<String> dirs, List<String> files) throws IOException {
        for (String d : dirs) {
            directory(root, d);
        }
        for (String f : files) {
            Path parent = directory(root, Path.of(f).getParent().toString());
            Path p = parent.resolve(Path.of(f).getFileName().toString());
            if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                    NoFollowDelete.delete(p);
                }
                Files.createFile(p);
            }
        }
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private static Path directory(Path root, String path) throws IOException {
        Path at = root;
        for (String name : path.split("/")) {
            if (name.isEmpty() || name.equals(".")) {
                continue;
            }
            if (name.equals("..")) {
                throw new IOException("path " + path + " climbs out of the sandbox");
            }
            at = at.resolve(name);
            if (!Files.isDirectory(at, LinkOption.NOFOLLOW_LINKS)) {
                if (Files.exists(at, LinkOption.NOFOLLOW_LINKS)) {
                    NoFollowDelete.delete(at); // a link is removed, never followed
                }
                Files.createDirectory(at);
                boolean shared = at.equals(root.resolve("tmp")) || at.equals(root.resolve("var/tmp"));
                Files.setAttribute(at, "unix:mode", shared ? 01777 : 0755, LinkOption.NOFOLLOW_LINKS);
            }
        }
        return at;
    }

    /**
     * Creates the directory {@code path} (absolute inside {@code root}) as {@code mkdir -p} inside the root would:
     * existing symlinks on the way are followed inside the root, missing directories are created (mode 0755).
     * Returns its host path.
     *
     * @throws IOException when a component is a file or a symlink that leads nowhere
     */
    public static Path createDirectories(Path root, String path) throws IOException {
        String prefix = "";
        Path at = root;
        for (String name : path.split("/")) {
            if (name.isEmpty() || name.equals(".")) {
                continue;
            }
            if (name.equals("..")) {
                throw new IOException("path " + path + " climbs out of the root");
            }
            prefix = prefix + "/" + name;
            Optional<Path> found = resolve(root, "/", prefix);
            if (found.isPresent()) {
                if (!Files.isDirectory(found.get(), LinkOption.NOFOLLOW_LINKS)
                        && !found.get().equals(root)) {
                    throw new IOException(prefix + " is not a directory");
                }
                at = found.get();
                continue;
            }
            Path created = at.resolve(name);
            if (Files.exists(created, LinkOption.NOFOLLOW_LINKS)) {
                throw new IOException(prefix + " is a symlink that leads nowhere");
            }
            Files.createDirectory(created);
            Files.setPosixFilePermissions(created, PosixFilePermissions.fromString("rwxr-xr-x"));
            at = created;
        }
        return at;
    }

    /**
     * Resolves {@code path} (absolute, or relative to {@code cwd}) inside the tree rooted at {@code root}, treating
     * every symlink as relative to that root. Returns the host path of the target, or empty when it does not exist.
     */
    public static Optional<Path> resolve(Path root, String cwd, String path) {
        Deque<String> todo = new ArrayDeque<>();
        List<String> at = new ArrayList<>();
        if (!path.startsWith("/")) {
            split(cwd, todo);
        }
        Deque<String> rest = new ArrayDeque<>();
        split(path, rest);
        todo.addAll(rest);
        int links = 0;
        while (!todo.isEmpty()) {
            String name = todo.pollFirst();
            if (name.isEmpty() || name.equals(".")) {
                continue;
            }
            if (name.equals("..")) {
                if (!at.isEmpty()) {
                    at.remove(at.size() - 1);
                }
                continue;
            }
            at.add(name);
            Path host = hostPath(root, at);
            BasicFileAttributes attrs;
            try {
                attrs = Files.readAttributes(host, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            } catch (IOException e) {
                return Optional.empty();
            }
            if (attrs.isSymbolicLink()) {
                if (++links > MAX_LINKS) {
                    return Optional.empty();
                }
                String target;
                try {
                    target = Files.readSymbolicLink(host).toString();
                } catch (IOException e) {
                    return Optional.empty();
                }
                at.remove(at.size() - 1);
                if (target.startsWith("/")) {
                    at.clear();
                }
                Deque<String> expanded = new ArrayDeque<>();
                split(target, expanded);
                while (!expanded.isEmpty()) {
                    todo.addFirst(expanded.pollLast());
                }
            }
        }
        return Optional.of(hostPath(root, at));
    }

    private static Path hostPath(Path root, List<String> at) {
        Path p = root;
        for (String name : at) {
            p = p.resolve(name);
        }
        return p;
    }

    private static void split(String path, Deque<String> into) {
        for (String s : path.split("/")) {
            if (!s.isEmpty()) {
                into.addLast(s);
            }
        }
    }
}
