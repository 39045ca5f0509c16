package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.UUID;
import java.util.function.Predicate;

/**
 * File work under a directory that a sandbox can write while the server, as root, works in it (a volume, a layer):
 * every path is resolved by the kernel from a descriptor of that directory with {@code Descriptors.openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)}, one system call per resolution, so no symbolic
 * link (planted, or swapped in mid-operation) is ever followed and nothing outside the directory, or on another file
 * system mounted in it, is reached. A path through a link is refused with {@link Refused}, never followed.
 *
 * <p>Only regular files are opened for reading, and only after their type was checked on a descriptor that cannot be
 * swapped ({@code O_PATH}, which opens no device and blocks on no FIFO). Files are replaced atomically: written to a
 * fresh name in the same directory descriptor, then renamed over the old one.
 */
public final class BeneathRoot implements Closeable {

    private static final FileCalls C = FileCalls.INSTANCE;
    private static final long RESOLVE = FileCalls.RESOLVE_BENEATH
            | FileCalls.RESOLVE_NO_SYMLINKS
            | FileCalls.RESOLVE_NO_MAGICLINKS
            | FileCalls.RESOLVE_NO_XDEV;
    private static final int DIR_FLAGS = FileCalls.O_RDONLY | FileCalls.O_DIRECTORY | FileCalls.O_CLOEXEC;
    private static final int CHUNK = 64 << 10;
    private static final int S_IFSOCK = 0140000;

    /** What an entry is, never following a link. */
    public enum Type {
        FILE,
        DIRECTORY,
        LINK,
        OTHER
    }

    /** An entry's type, size in bytes and last modification. */
    public record Attributes(Type type, long size, Instant modified) {}

    /** A regular file found by {@link #files}: its path relative to the root and its attributes. */
    public record Entry(String path, Attributes attributes) {}

    /** A path that goes through a symbolic link or out of the root: refused rather than followed. */
    public static final class Refused extends FileSystemException {
        Refused(String path, String what) {
            super(
                    path,
                    null,
                    "\"" + path + "\" goes through a symbolic link or leaves " + what + ": refused (links"
                            + " are followed only inside a sandbox, never by the server)");
        }

        @Override
        public String getMessage() {
            return getReason();
        }
    }

    /** The file system holding the root is full, or a quota is exhausted. */
    public static final class OutOfSpace extends FileSystemException {
        OutOfSpace(String path, String what) {
            super(path, null, "no space left on the disk of " + what + " (writing \"" + path + "\")");
        }

        @Override
        public String getMessage() {
            return getReason();
        }
    }

    private final int rootFd;
    private final String what;
    private boolean closed;

    private BeneathRoot(int rootFd, String what) {
        this.rootFd = rootFd;
        this.what = what;
    }

    /**
     * Opens {@code root}, a directory the server owns the path to (the last component must not be a link).
     *
     * @param what how messages name the root, e.g. {@code "volume cache"}
     */
    public static BeneathRoot open(Path root, String what) throws IOException {
        try {
            return new BeneathRoot(
                    Descriptors.openat2(
                            FileCalls.AT_FDCWD,
                            Descriptors.cString(root.toString()),
                            DIR_FLAGS | FileCalls.O_NOFOLLOW,
                            0,
                            0),
                    what);
        } catch (LastErrorException e) {
            if (e.getErrorCode() == FileCalls.ENOSYS) {
                throw new IOException("cannot work on the files of " + what + " safely: the kernel lacks openat2"
                        + " (Linux 5.6 or newer is needed)");
            }
            throw translate(e, root.toString(), what);
        }
    }

    /**
     * Opens the regular file {@code path} for reading. Anything else (a directory, a FIFO, a device) is refused
     * without being opened: its type is read from an {@code O_PATH} descriptor, then that same file is opened through
     * the descriptor's own {@code /proc/self/fd} entry, which names the open file itself, not a path a sandbox could
     * change.
     */
    public RegularFileReader openFile(String path) throws IOException {
        List<String> parts = parts(path);
        int handle;
        try {
            handle = Descriptors.openat2(
                    rootFd,
                    Descriptors.cString(String.join("/", parts.isEmpty() ? List.of(".") : parts)),
                    FileCalls.O_PATH | FileCalls.O_CLOEXEC,
                    0,
                    RESOLVE);
        } catch (LastErrorException e) {
            throw translate(e, path, what);
        }
        try {
            Stat checked = stat(handle, path);
            if (checked.attributes().type() != Type.FILE) {
                throw new FileSystemException(
                        path, null, "it is " + article(checked.attributes().type()) + ", not a regular file");
            }
            int fd;
            try {
                fd = C.open(
                        Descriptors.cString("/proc/self/fd/" + handle),
                        FileCalls.O_RDONLY | FileCalls.O_CLOEXEC | FileCalls.O_NOCTTY | FileCalls.O_NONBLOCK,
                        0);
            } catch (LastErrorException e) {
                throw translate(e, path, what);
            }
            try {
                Stat opened = stat(fd, path);
                if (opened.inode() != checked.inode() || opened.device() != checked.device()) {
                    throw new FileSystemException(path, null, "it changed while it was opened");
                }
                return new RegularFileReader(fd, opened.attributes().size());
            } catch (IOException | RuntimeException e) {
                Descriptors.closeQuietly(fd);
                throw e;
            }
        } finally {
            Descriptors.closeQuietly(handle);
        }
    }

    /**
     * Replaces (or creates) the file {@code path} with {@code data}, creating missing parent directories (mode 0755)
     * one at a time: readers see the old content or the new, never a part. The new file has mode 0644.
     */
    public void replaceFile(String path, InputStream data) throws IOException {
        List<String> parts = parts(path);
        if (parts.isEmpty()) {
            throw new FileSystemException(path, null, "it names " + what + " itself, not a file in it");
        }
        int dir = createDirectories(parent(parts), path);
        byte[] temp = Descriptors.cString(".chalk-" + UUID.randomUUID() + ".tmp");
        try {
            int fd;
            try {
                fd = Descriptors.openat2(
                        dir,
                        temp,
                        FileCalls.O_WRONLY | FileCalls.O_CREAT | FileCalls.O_EXCL | FileCalls.O_CLOEXEC,
                        0644,
                        RESOLVE);
            } catch (LastErrorException e) {
                throw translate(e, path, what);
            }
            boolean renamed = false;
            try {
                try {
                    writeAll(fd, data, path);
                } catch (IOException | RuntimeException e) {
                    Descriptors.closeQuietly(fd);
                    throw e;
                }
                C.close(fd); // a failed close may mean lost data: it fails the write
                C.renameat(dir, temp, dir, Descriptors.cString(last(parts)));
                renamed = true;
            } catch (LastErrorException e) {
                throw translate(e, path, what);
            } finally {
                if (!renamed) {
                    try {
                        C.unlinkat(dir, temp, 0);
                    } catch (LastErrorException e) {
                        // already gone
                    }
                }
            }
        } finally {
            Descriptors.closeQuietly(dir);
        }
    }

    /**
     * Removes the file, link (never its target) or empty directory at {@code path}; false when nothing was there.
     *
     * @throws DirectoryNotEmptyException for a directory that is not empty
     */
    public boolean delete(String path) throws IOException {
        List<String> parts = parts(path);
        if (parts.isEmpty()) {
            throw new FileSystemException(path, null, "it names " + what + " itself");
        }
        int dir;
        try {
            dir = openDir(parent(parts), path);
        } catch (NoSuchFileException e) {
            return false;
        }
        try {
            return unlink(dir, last(parts), path);
        } finally {
            Descriptors.closeQuietly(dir);
        }
    }

    /**
     * The bounds of one walk: the names it reads (files, directories, anything) and their paths' characters in all.
     * A sandbox can make millions of names in a volume, each with a path of kilobytes, and a walk holds them all.
     */
    public record WalkBounds(int names, long pathChars) {}

    /** A walk that went past its {@link WalkBounds}; nothing of it is kept. */
    public static final class TooManyNames extends IOException {
        TooManyNames(String message) {
            super(message);
        }
    }

    /**
     * The regular files under directory {@code path}, with paths relative to the root, listing and entering only what
     * {@code relevant} accepts (given its relative path; the rest is neither looked at nor counted). Links are neither
     * listed nor entered; what vanishes or turns into a link while it is walked is left out.
     *
     * @throws TooManyNames when the walk finds more relevant names, or longer paths, than {@code bounds} allow
     */
    public List<Entry> files(String path, Predicate<String> relevant, WalkBounds bounds) throws IOException {
        long[] read = new long[2]; // names, path characters
        List<Entry> out = new ArrayList<>();
        Deque<String> todo = new ArrayDeque<>();
        todo.add(String.join("/", parts(path)));
        while (!todo.isEmpty()) {
            String rel = todo.poll();
            int dir;
            try {
                dir = openDir(parts(rel), rel);
            } catch (NoSuchFileException | Refused e) {
                continue; // removed, or swapped for a link, since it was listed
            }
            try {
                String at = rel;
                for (String name : names(
                        dir, rel, bounds.names() - read[0], n -> relevant.test(at.isEmpty() ? n : at + "/" + n))) {
                    String child = rel.isEmpty() ? name : rel + "/" + name;
                    read[0]++;
                    read[1] += child.length();
                    if (read[0] > bounds.names() || read[1] > bounds.pathChars()) {
                        throw new TooManyNames("more than " + bounds.names() + " names, or " + bounds.pathChars()
                                + " characters of paths, under \"" + path + "\"");
                    }
                    Attributes a;
                    try {
                        a = statx(dir, name, FileCalls.AT_SYMLINK_NOFOLLOW, child);
                    } catch (NoSuchFileException e) {
                        continue;
                    }
                    if (a.type() == Type.FILE) {
                        out.add(new Entry(child, a));
                    } else if (a.type() == Type.DIRECTORY) {
                        todo.add(child);
                    }
                }
            } finally {
                Descriptors.closeQuietly(dir);
            }
        }
        return out;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Descriptors.closeQuietly(rootFd);
        }
    }

    private record Stat(Attributes attributes, long inode, long device) {}

    private int createDirectories(List<String> parts, String path) throws IOException {
        int fd = openDir(List.of(), path);
        try {
            for (String name : parts) {
                byte[] n = Descriptors.cString(name);
                try {
                    C.mkdirat(fd, n, 0755);
                } catch (LastErrorException e) {
                    if (e.getErrorCode() != FileCalls.EEXIST) {
                        throw translate(e, path, what);
                    }
                }
                int next;
                try {
                    next = Descriptors.openat2(fd, n, DIR_FLAGS, 0, RESOLVE);
                } catch (LastErrorException e) {
                    throw translate(e, path, what);
                }
                Descriptors.closeQuietly(fd);
                fd = next;
            }
            return fd;
        } catch (IOException | RuntimeException e) {
            Descriptors.closeQuietly(fd);
            throw e;
        }
    }

    private boolean unlink(int dir, String name, String path) throws IOException {
        byte[] n = Descriptors.cString(name);
        try {
            C.unlinkat(dir, n, 0);
            return true;
        } catch (LastErrorException e) {
            if (e.getErrorCode() == FileCalls.ENOENT) {
                return false;
            }
            if (e.getErrorCode() != FileCalls.EISDIR) {
                throw translate(e, path, what);
            }
        }
        try {
            C.unlinkat(dir, n, FileCalls.AT_REMOVEDIR);
            return true;
        } catch (LastErrorException e) {
            if (e.getErrorCode() == FileCalls.ENOENT) {
                return false;
            }
            throw translate(e, path, what);
        }
    }

    private int openDir(List<String> parts, String path) throws IOException {
        try {
            return Descriptors.openat2(
                    rootFd,
                    Descriptors.cString(parts.isEmpty() ? "." : String.join("/", parts)),
                    DIR_FLAGS,
                    0,
                    RESOLVE);
        } catch (LastErrorException e) {
            throw translate(e, path, what);
        }
    }

    /**
     * The names in directory {@code dir} that {@code keep} accepts, at most {@code most} of them (one more, to show
     * there were more).
     */
    private List<String> names(int dir, String path, long most, Predicate<String> keep) throws IOException {
        List<String> names = new ArrayList<>();
        Memory buffer = new Memory(CHUNK);
        while (true) {
            long n;
            try {
                n = C.syscall(FileCalls.SYS_GETDENTS64, dir, buffer, CHUNK);
            } catch (LastErrorException e) {
                if (e.getErrorCode() == FileCalls.EINTR) {
                    continue;
                }
                throw translate(e, path, what);
            }
            if (n == 0) {
                return names;
            }
            // struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name NUL-terminated
            for (long at = 0; at < n; ) {
                int reclen = buffer.getShort(at + 16) & 0xffff;
                String name = buffer.getString(at + 19, StandardCharsets.UTF_8.name());
                if (!name.equals(".") && !name.equals("..") && keep.test(name)) {
                    names.add(name);
                    if (names.size() > most) {
                        return names; // the caller stops at the bound: reading the rest would only fill the heap
                    }
                }
                at += reclen;
            }
        }
    }

    /**
     * Pins the Unix socket {@code path}: a descriptor on the socket itself (a link or anything else there is refused),
     * whose {@code /proc/self/fd} entry a client connects through. A sandbox that can write the socket's directory may
     * swap the name for a link to another socket at any time; a connection through the pin still reaches this one.
     */
    public PinnedSocket pinSocket(String path) throws IOException {
        List<String> parts = parts(path);
        int fd;
        try {
            fd = Descriptors.openat2(
                    rootFd,
                    Descriptors.cString(String.join("/", parts)),
                    FileCalls.O_PATH | FileCalls.O_NOFOLLOW | FileCalls.O_CLOEXEC,
                    0,
                    RESOLVE);
        } catch (LastErrorException e) {
            throw translate(e, path, what);
        }
        Memory buf;
        try {
            buf = Descriptors.statx(fd);
        } catch (LastErrorException e) {
            Descriptors.closeQuietly(fd);
            throw translate(e, path, what);
        }
        if ((buf.getShort(Descriptors.STATX_MODE) & FileCalls.S_IFMT) != S_IFSOCK) {
            Descriptors.closeQuietly(fd);
            throw new Refused(path, what);
        }
        return new PinnedSocket(fd);
    }

    private Attributes statx(int dir, String name, int flags, String path) throws IOException {
        return statxFull(dir, name, flags, path).attributes();
    }

    private Stat stat(int fd, String path) throws IOException {
        return statxFull(fd, "", FileCalls.AT_EMPTY_PATH, path);
    }

    private Stat statxFull(int dir, String name, int flags, String path) throws IOException {
        Memory buf = new Memory(256);
        try {
            C.statx(
                    dir,
                    Descriptors.cString(name),
                    flags | FileCalls.AT_NO_AUTOMOUNT,
                    FileCalls.STATX_BASIC_STATS,
                    buf);
        } catch (LastErrorException e) {
            throw translate(e, path, what);
        }
        // struct statx: stx_mode u16 @28, stx_ino u64 @32, stx_size u64 @40, stx_mtime @112 (s64 sec, u32 nsec),
        // stx_dev_major u32 @136, stx_dev_minor u32 @140
        int mode = buf.getShort(28) & 0xffff;
        Type type = switch (mode & FileCalls.S_IFMT) {
            case FileCalls.S_IFREG -> Type.FILE;
            case FileCalls.S_IFDIR -> Type.DIRECTORY;
            case FileCalls.S_IFLNK -> Type.LINK;
            default -> Type.OTHER;
        };
        Instant modified = Instant.ofEpochSecond(buf.getLong(112), buf.getInt(120) & 0xffffffffL);
        long device = ((long) buf.getInt(136) << 32) | (buf.getInt(140) & 0xffffffffL);
        return new Stat(new Attributes(type, buf.getLong(40), modified), buf.getLong(32), device);
    }

    private void writeAll(int fd, InputStream data, String path) throws IOException {
        byte[] chunk = new byte[CHUNK];
        Memory buffer = new Memory(CHUNK);
        int n;
        while ((n = data.read(chunk)) > 0) {
            buffer.write(0, chunk, 0, n);
            long off = 0;
            while (off < n) {
                try {
                    off += C.write(fd, buffer.share(off), n - off);
                } catch (LastErrorException e) {
                    if (e.getErrorCode() != FileCalls.EINTR) {
                        throw translate(e, path, what);
                    }
                }
            }
        }
    }

    private static IOException translate(LastErrorException e, String path, String what) {
        return switch (e.getErrorCode()) {
            case FileCalls.ELOOP, FileCalls.EXDEV -> new Refused(path, what);
            case FileCalls.ENOENT -> new NoSuchFileException(path);
            case FileCalls.ENOTDIR -> new NoSuchFileException(path, null, "a component of the path is not a directory");
            case FileCalls.EEXIST -> new FileAlreadyExistsException(path);
            case FileCalls.ENOTEMPTY -> new DirectoryNotEmptyException(path);
            case FileCalls.EISDIR -> new FileSystemException(path, null, "it is a directory");
            case FileCalls.ENOSPC, FileCalls.EDQUOT -> new OutOfSpace(path, what);
            case FileCalls.ENAMETOOLONG -> new FileSystemException(path, null, "the path is too long");
            default -> new FileSystemException(path, null, e.getMessage());
        };
    }

    private static List<String> parts(String path) throws IOException {
        List<String> parts = new ArrayList<>();
        for (String p : (path == null ? "" : path).split("/")) {
            if (p.isEmpty() || p.equals(".")) {
                continue;
            }
            if (p.equals("..") || p.indexOf('\0') >= 0) {
                throw new FileSystemException(path, null, "'..' and NUL may not appear in the path");
            }
            parts.add(p);
        }
        return parts;
    }

    private static List<String> parent(List<String> parts) {
        return parts.subList(0, parts.size() - 1);
    }

    private static String last(List<String> parts) {
        return parts.get(parts.size() - 1);
    }

    private static String article(Type type) {
        return switch (type) {
            case DIRECTORY -> "a directory";
            case LINK -> "a symbolic link";
            case FILE -> "a file";
            case OTHER -> "a FIFO, socket or device";
        };
    }
}
