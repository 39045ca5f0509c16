package ai.chalk.compute.server.runtime.userns;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;

/**
 * The libc calls behind id-mapped mounts (glibc 2.36 wraps the new mount API), per-thread file-system ids and handing
 * a process's pipes to a sandbox's ids (glibc 2.36 wraps the pidfd calls).
 */
interface IdMapCalls extends Library {

    IdMapCalls INSTANCE = Native.load("c", IdMapCalls.class);

    int AT_FDCWD = -100;
    int AT_EMPTY_PATH = 0x1000;
    int OPEN_TREE_CLONE = 1;
    int OPEN_TREE_CLOEXEC = 0x80000;
    int MOVE_MOUNT_F_EMPTY_PATH = 4;
    long MOUNT_ATTR_IDMAP = 0x0010_0000L;
    int O_RDONLY = 0;
    int O_CLOEXEC = 0x80000;
    /** {@code _LINUX_CAPABILITY_VERSION_3}: two 32-bit words per set. */
    int CAPABILITY_VERSION_3 = 0x2008_0522;

    int open_tree(int dirfd, String path, int flags) throws LastErrorException;

    /** {@code attr}: struct mount_attr, four 64-bit words (attr_set, attr_clr, propagation, userns_fd). */
    int mount_setattr(int dirfd, String path, int flags, long[] attr, long size) throws LastErrorException;

    int move_mount(int fromDirfd, String fromPath, int toDirfd, String toPath, int flags) throws LastErrorException;

    int mount(String source, String target, String type, long flags, String data) throws LastErrorException;

    int open(String path, int flags) throws LastErrorException;

    int close(int fd) throws LastErrorException;

    /** Per thread; returns the previous id and never fails (a refused id leaves it as it was). */
    int setfsuid(int fsuid);

    int setfsgid(int fsgid);

    /** {@code header}: version and pid (0: this thread); {@code data}: effective, permitted, inheritable, twice. */
    int capget(int[] header, int[] data) throws LastErrorException;

    int capset(int[] header, int[] data) throws LastErrorException;

    int pidfd_open(int pid, int flags) throws LastErrorException;

    /** A duplicate of descriptor {@code targetfd} of the process behind {@code pidfd}, close-on-exec. */
    int pidfd_getfd(int pidfd, int targetfd, int flags) throws LastErrorException;

    int fchown(int fd, int owner, int group) throws LastErrorException;

    int pipe2(int[] fds, int flags) throws LastErrorException;
}
