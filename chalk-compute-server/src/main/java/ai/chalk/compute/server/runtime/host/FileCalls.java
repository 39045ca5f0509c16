package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

/**
 * The descriptor-relative file calls Java lacks, behind {@link BeneathRoot} (and the pipe of {@link OutputPipes}). Paths are NUL-terminated UTF-8 bytes
 * (never the JVM's locale-dependent string encoding); each call throws {@link LastErrorException} with errno on
 * failure.
 */
interface FileCalls extends Library {

    FileCalls INSTANCE = Native.load("c", FileCalls.class);

    /** {@code openat2(2)}: the same number on x86_64 and aarch64 (it postdates the split syscall tables). */
    long SYS_OPENAT2 = 437;
    /** {@code getdents64(2)}, which differs between the two. */
    long SYS_GETDENTS64 = "aarch64".equals(System.getProperty("os.arch")) ? 61 : 217;

    int AT_FDCWD = -100;
    int AT_SYMLINK_NOFOLLOW = 0x100;
    int AT_REMOVEDIR = 0x200;
    int AT_NO_AUTOMOUNT = 0x800;
    int AT_EMPTY_PATH = 0x1000;

    int O_RDONLY = 0;
    int O_WRONLY = 1;
    int O_CREAT = 0100;
    int O_EXCL = 0200;
    int O_NOCTTY = 0400;
    int O_NONBLOCK = 04000;
    int O_CLOEXEC = 02000000;
    int O_PATH = 010000000;
    /** Differs between x86_64 and the generic table that aarch64 uses. */
    int O_DIRECTORY = "aarch64".equals(System.getProperty("os.arch")) ? 040000 : 0200000;

    int O_NOFOLLOW = "aarch64".equals(System.getProperty("os.arch")) ? 0100000 : 0400000;

    long RESOLVE_NO_XDEV = 0x01;
    long RESOLVE_NO_MAGICLINKS = 0x02;
    long RESOLVE_NO_SYMLINKS = 0x04;
    long RESOLVE_BENEATH = 0x08;
    long RESOLVE_IN_ROOT = 0x10;

    int STATX_BASIC_STATS = 0x7ff;
    int S_IFMT = 0170000;
    int S_IFDIR = 0040000;
    int S_IFREG = 0100000;
    int S_IFLNK = 0120000;

    int EPERM = 1;
    int ENOENT = 2;
    int EINTR = 4;
    int EEXIST = 17;
    int EXDEV = 18;
    int ENOTDIR = 20;
    int EISDIR = 21;
    int EINVAL = 22;
    int ENOSPC = 28;
    int ENAMETOOLONG = 36;
    int ENOSYS = 38;
    int ENOTEMPTY = 39;
    int ELOOP = 40;
    int EDQUOT = 122;

    /** {@code openat2(dirfd, path, how, size)} through {@code syscall(2)}; glibc 2.36 has no wrapper. */
    long syscall(long number, int dirfd, byte[] path, Pointer how, long size) throws LastErrorException;

    /** {@code getdents64(fd, buffer, size)} through {@code syscall(2)}. */
    long syscall(long number, int fd, Pointer buffer, long size) throws LastErrorException;

    int open(byte[] path, int flags, int mode) throws LastErrorException;

    int close(int fd) throws LastErrorException;

    /** {@code pipe2(2)}, for {@link OutputPipes}. */
    int pipe2(int[] fds, int flags) throws LastErrorException;

    long read(int fd, byte[] buffer, long count) throws LastErrorException;

    long write(int fd, Pointer buffer, long count) throws LastErrorException;

    int mkdirat(int dirfd, byte[] path, int mode) throws LastErrorException;

    int unlinkat(int dirfd, byte[] path, int flags) throws LastErrorException;

    int renameat(int olddirfd, byte[] oldpath, int newdirfd, byte[] newpath) throws LastErrorException;

    int statx(int dirfd, byte[] path, int flags, int mask, Pointer buffer) throws LastErrorException;
}
