package ai.chalk.compute.server.runtime.local.image;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarFile;

/**
 * An image archive: an {@code oci-archive} (an OCI layout in a tar) or what {@code docker save} writes. Entries are
 * read in place; a symlink entry (older {@code docker save} links repeated layers) is followed inside the archive.
 */
final class TarBlobs implements Blobs {

    private static final int MAX_LINKS = 8;

    private final TarFile tar;
    private final Map<String, TarArchiveEntry> entries = new HashMap<>();

    TarBlobs(Path file) throws IOException {
        this.tar = new TarFile(file);
        for (TarArchiveEntry e : tar.getEntries()) {
            entries.put(normalize(e.getName()), e);
        }
    }

    @Override
    public boolean has(String path) {
        return entry(path) != null;
    }

    @Override
    public InputStream open(String path) throws IOException {
        TarArchiveEntry e = entry(path);
        if (e == null) {
            throw new NoSuchFileException(path + " (in the image archive)");
        }
        return tar.getInputStream(e);
    }

    private TarArchiveEntry entry(String path) {
        String name = normalize(path);
        for (int i = 0; i < MAX_LINKS; i++) {
            TarArchiveEntry e = entries.get(name);
            if (e == null) {
                return null;
            }
            if (e.isFile()) {
                return e;
            }
            if (!e.isSymbolicLink()) {
                return null;
            }
            String target = e.getLinkName();
            int slash = name.lastIndexOf('/');
            name = normalize(
                    target.startsWith("/") ? target : (slash < 0 ? "" : name.substring(0, slash + 1)) + target);
        }
        return null;
    }

    /** A name without leading {@code ./} or {@code /}, with {@code .} and {@code ..} applied inside the archive. */
    static String normalize(String name) {
        java.util.ArrayDeque<String> parts = new java.util.ArrayDeque<>();
        for (String s : name.split("/")) {
            if (s.isEmpty() || s.equals(".")) {
                continue;
            }
            if (s.equals("..")) {
                parts.pollLast();
            } else {
                parts.addLast(s);
            }
        }
        return String.join("/", List.copyOf(parts));
    }

    @Override
    public void close() throws IOException {
        tar.close();
    }
}
