package ai.chalk.compute.server.runtime.host;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Deleting trees that hold whatever a sandbox wrote (layers, snapshots, volumes): links are removed, never
 * followed, and no other file system is entered.
 */
public final class NoFollowDelete {

    private NoFollowDelete() {}

    /**
     * Deletes a directory tree without following symlinks and without crossing into other file systems: GNU
     * {@code rm -rf --one-file-system} where available (it copes with arbitrarily deep trees), else a
     * descriptor-relative walk. Nothing there is fine; a file or a link is removed itself (a link never its target).
     */
    public static void delete(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            Files.delete(dir);
            return;
        }
        // most often empty by now (a sandbox's directory once its layer is unmounted): one rmdir, not a process
        try {
            Files.delete(dir);
            return;
        } catch (FileSystemException e) {
            // not empty, a mount point still (EBUSY), or gone meanwhile: the whole walk below
        }
        Path rm = Path.of("/bin/rm");
        if (Files.isExecutable(rm)) {
            Process p = new ProcessBuilder(rm.toString(), "-rf", "--one-file-system", "--", dir.toString())
                    .redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            try {
                if (!p.waitFor(5, TimeUnit.MINUTES)) {
                    p.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while deleting " + dir, e);
            }
            if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
                return;
            }
            if (!out.isEmpty()) {
                throw new IOException("cannot delete " + dir + ": " + out);
            }
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            if (!(ds instanceof SecureDirectoryStream<Path> sds)) {
                throw new IOException("cannot delete " + dir + " safely: no descriptor-relative directory access");
            }
            deleteContents(sds, 0);
        }
        Files.delete(dir);
    }

    private static void deleteContents(SecureDirectoryStream<Path> dir, int depth) throws IOException {
        if (depth > 4096) {
            throw new IOException("directory tree too deep to delete");
        }
        List<Path> names = new ArrayList<>();
        dir.forEach(p -> names.add(p.getFileName()));
        for (Path name : names) {
            BasicFileAttributes attrs;
            try {
                attrs = dir.getFileAttributeView(name, BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                        .readAttributes();
            } catch (NoSuchFileException e) {
                continue;
            }
            if (attrs.isDirectory()) {
                try (SecureDirectoryStream<Path> child = dir.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS)) {
                    deleteContents(child, depth + 1);
                }
                dir.deleteDirectory(name);
            } else {
                dir.deleteFile(name);
            }
        }
    }
}
