package ai.chalk.compute.server.runtime.local.image;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** An OCI image layout directory; paths inside it are read without following links. */
final class DirectoryBlobs implements Blobs {

    private final Path dir;

    DirectoryBlobs(Path dir) {
        this.dir = dir;
    }

    @Override
    public boolean has(String path) {
        Path p = resolve(path);
        return p != null && Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS);
    }

    @Override
    public InputStream open(String path) throws IOException {
        Path p = resolve(path);
        if (p == null || !Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
            throw new NoSuchFileException(dir.getFileName() + "/" + path);
        }
        return Files.newInputStream(p, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
    }

    /** The path inside the layout, or null when a component is not a real directory or climbs out. */
    private Path resolve(String path) {
        Path at = dir;
        String[] parts = path.split("/");
        for (int i = 0; i < parts.length; i++) {
            String s = parts[i];
            if (s.isEmpty() || s.equals(".") || s.equals("..")) {
                return null;
            }
            at = at.resolve(s);
            if (i < parts.length - 1 && !Files.isDirectory(at, LinkOption.NOFOLLOW_LINKS)) {
                return null;
            }
        }
        return at;
    }

    @Override
    public void close() {}
}
