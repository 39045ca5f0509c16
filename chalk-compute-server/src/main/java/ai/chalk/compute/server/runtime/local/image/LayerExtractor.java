package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies image layers (tar streams) one after the other onto a directory, the flattened root filesystem, as a
 * container engine would stack them: OCI whiteouts ({@code .wh.NAME}) delete what lower layers put there, an opaque
 * marker ({@code .wh..wh..opq}) empties its directory of lower layers' entries.
 *
 * <p>It runs as root on the host, so it never follows a link: every directory on the way to an entry must be a
 * real directory, and one that is a symlink or a file (an earlier layer can plant {@code x -> /etc} for a later
 * {@code x/passwd}) is replaced by a directory, as an upper layer's directory hides a lower non-directory in an
 * overlay. Files are created with {@code O_NOFOLLOW} after whatever was at their path is removed; hard links must
 * point at an entry already inside the tree. Device nodes and FIFOs are skipped (sandboxes get their own
 * {@code /dev}), and so are extended attributes (file capabilities would be dropped in a sandbox anyway).
 * Nothing else writes into the tree meanwhile: it is a fresh directory of the image cache.
 */
final class LayerExtractor {

    private static final Logger log = LoggerFactory.getLogger(LayerExtractor.class);
    static final String WHITEOUT = ".wh.";
    static final String OPAQUE = ".wh..wh..opq";

    /**
     * The most entries, and characters of their names, one layer may have: each is remembered until the layer is
     * applied (whiteouts cost the disk nothing), so a layer of millions of long names filled the heap. Large images hold
     * tens of thousands of files a layer.
     */
    static final int MAX_ENTRIES = 1_000_000;

    static final long MAX_NAME_CHARS = 64_000_000;

    private final Path root;

    LayerExtractor(Path root) {
        this.root = root;
    }

    /**
     * Applies one layer.
     *
     * @param tar  the uncompressed tar stream; read to its end
     * @param name how errors name the layer
     * @throws IOException when the stream is not a tar or an entry cannot be created (a hard link out of the tree,
     *                     a name with {@code ..})
     */
    void apply(InputStream tar, String name) throws IOException {
        Set<String> written = new HashSet<>();
        List<String> opaque = new ArrayList<>();
        List<String> whiteouts = new ArrayList<>();
        TarArchiveInputStream in = new TarArchiveInputStream(tar);
        TarArchiveEntry e;
        int entries = 0;
        long nameChars = 0;
        while ((e = in.getNextEntry()) != null) {
            nameChars += e.getName().length();
            if (e.isSparse()) {
                // the reader makes a sparse entry's zeros itself: a few bytes of archive stood for a terabyte written
                throw new ImageSourceException(name + " holds a sparse file (" + e.getName() + "), which the local"
                        + " runtime does not unpack: export the image without sparse files");
            }
            if (++entries > MAX_ENTRIES || nameChars > MAX_NAME_CHARS) {
                throw new ImageSourceException(name + " has more than " + MAX_ENTRIES + " entries, or " + MAX_NAME_CHARS
                        + " characters of names, more than the local runtime unpacks");
            }
            List<String> parts = parts(e.getName(), name);
            if (parts.isEmpty()) {
                continue; // the root itself keeps the cache's mode and owner
            }
            String base = parts.get(parts.size() - 1);
            String rel = String.join("/", parts);
            if (base.equals(OPAQUE)) {
                opaque.add(String.join("/", parts.subList(0, parts.size() - 1)));
                continue;
            }
            if (base.startsWith(WHITEOUT)) {
                List<String> target = new ArrayList<>(parts.subList(0, parts.size() - 1));
                target.add(base.substring(WHITEOUT.length()));
                whiteouts.add(String.join("/", target));
                continue;
            }
            // whiteouts of this layer apply to lower layers only, so they wait until its entries are in; an entry
            // that replaces a lower one needs the lower one gone first, which is what create() does
            Path dir = directory(parts.subList(0, parts.size() - 1), written);
            Path p = dir.resolve(base);
            if (create(e, p, in, name)) {
                written.add(rel);
            }
        }
        for (String w : whiteouts) {
            if (!written.contains(w)) {
                existing(w).ifPresent(this::deleteQuietly);
            }
        }
        for (String o : opaque) {
            Path dir = directory(o.isEmpty() ? List.of() : List.of(o.split("/")), written);
            clearLower(dir, o, written);
        }
        in.transferTo(OutputStream.nullOutputStream()); // to the end, so that a digest of the stream is complete
    }

    private boolean create(TarArchiveEntry e, Path p, InputStream data, String layer) throws IOException {
        boolean isDir = Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS);
        if (e.isDirectory()) {
            if (!isDir) {
                removeIfPresent(p);
                Files.createDirectory(p);
            }
            setMetadata(p, e, false);
            return true;
        }
        if (e.isCharacterDevice() || e.isBlockDevice() || e.isFIFO()) {
            log.debug("Layer {}: skipping device or FIFO {}", layer, e.getName());
            return false;
        }
        removeIfPresent(p);
        if (e.isSymbolicLink()) {
            Files.createSymbolicLink(p, Path.of(e.getLinkName()));
            setOwner(p, e);
            return true;
        }
        if (e.isLink()) {
            Path target = existing(String.join("/", parts(e.getLinkName(), layer)))
                    .orElseThrow(() -> new IOException("layer " + layer + ": hard link " + e.getName() + " points at "
                            + e.getLinkName() + ", which is not in the image (or lies behind a symlink)"));
            if (Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                throw new IOException("layer " + layer + ": hard link " + e.getName() + " points at a directory");
            }
            Files.createLink(p, target); // link(2) links a symlink itself, never its target
            return true;
        }
        try (OutputStream out = Files.newOutputStream(
                p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
            data.transferTo(out);
        }
        setMetadata(p, e, true);
        return true;
    }

    /**
     * The directory at {@code parts}, every component a real directory: a missing one is created, a symlink or
     * file in the way is replaced.
     */
    private Path directory(List<String> parts, Set<String> written) throws IOException {
        Path at = root;
        StringBuilder rel = new StringBuilder();
        for (String part : parts) {
            at = at.resolve(part);
            rel.append(rel.length() == 0 ? "" : "/").append(part);
            if (!Files.isDirectory(at, LinkOption.NOFOLLOW_LINKS)) {
                removeIfPresent(at);
                Files.createDirectory(at);
                written.add(rel.toString());
            }
        }
        return at;
    }

    /** The host path of an entry already in the tree, reached through real directories only. */
    private java.util.Optional<Path> existing(String rel) {
        Path at = root;
        String[] parts = rel.split("/");
        for (int i = 0; i < parts.length; i++) {
            at = at.resolve(parts[i]);
            boolean last = i == parts.length - 1;
            if (last
                    ? !Files.exists(at, LinkOption.NOFOLLOW_LINKS)
                    : !Files.isDirectory(at, LinkOption.NOFOLLOW_LINKS)) {
                return java.util.Optional.empty();
            }
        }
        return rel.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(at);
    }

    /** Removes from {@code dir} everything this layer did not write: an opaque directory hides lower layers. */
    private void clearLower(Path dir, String rel, Set<String> written) throws IOException {
        try (DirectoryStream<Path> children = Files.newDirectoryStream(dir)) {
            for (Path c : children) {
                String childRel = (rel.isEmpty() ? "" : rel + "/") + c.getFileName();
                if (!written.contains(childRel)) {
                    NoFollowDelete.delete(c);
                } else if (Files.isDirectory(c, LinkOption.NOFOLLOW_LINKS)) {
                    clearLower(c, childRel, written);
                }
            }
        }
    }

    private static void removeIfPresent(Path p) throws IOException {
        if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
            NoFollowDelete.delete(p);
        }
    }

    private void deleteQuietly(Path p) {
        try {
            NoFollowDelete.delete(p);
        } catch (IOException ex) {
            log.warn("Cannot apply a whiteout to {}: {}", root.relativize(p), ex.toString());
        }
    }

    private static void setOwner(Path p, TarArchiveEntry e) throws IOException {
        Files.setAttribute(p, "unix:uid", (int) e.getLongUserId(), LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(p, "unix:gid", (int) e.getLongGroupId(), LinkOption.NOFOLLOW_LINKS);
    }

    /** Owner first: changing it clears the set-id bits, which the mode then sets again. */
    private static void setMetadata(Path p, TarArchiveEntry e, boolean times) throws IOException {
        setOwner(p, e);
        Files.setAttribute(p, "unix:mode", e.getMode() & 07777, LinkOption.NOFOLLOW_LINKS);
        if (times) {
            FileTime t = FileTime.from(e.getLastModifiedDate().toInstant());
            Files.getFileAttributeView(p, BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                    .setTimes(t, null, null);
        }
    }

    /** The components of an entry name; {@code ..} anywhere refuses the layer. */
    static List<String> parts(String entryName, String layer) throws IOException {
        List<String> parts = new ArrayList<>();
        for (String s : entryName.split("/")) {
            if (s.isEmpty() || s.equals(".")) {
                continue;
            }
            if (s.equals("..")) {
                throw new IOException("layer " + layer + ": entry " + entryName + " climbs out of the image root");
            }
            parts.add(s);
        }
        return parts;
    }
}
