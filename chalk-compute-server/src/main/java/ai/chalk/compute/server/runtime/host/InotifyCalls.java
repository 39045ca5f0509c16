package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;

/** The libc calls behind {@link DirectoryChanges}: an inotify descriptor, its watches, and a read of its events. */
interface InotifyCalls extends Library {

    InotifyCalls INSTANCE = Native.load("c", InotifyCalls.class);

    int IN_NONBLOCK = 04000;
    int IN_CLOEXEC = 02000000;
    int IN_ATTRIB = 0x4;
    int IN_MOVED_FROM = 0x40;
    int IN_MOVED_TO = 0x80;
    int IN_CREATE = 0x100;
    int IN_DELETE = 0x200;
    int IN_DELETE_SELF = 0x400;
    int IN_MOVE_SELF = 0x800;
    int IN_ONLYDIR = 0x01000000;
    int IN_DONT_FOLLOW = 0x02000000;
    int EAGAIN = 11;

    int inotify_init1(int flags) throws LastErrorException;

    int inotify_add_watch(int fd, String path, int mask) throws LastErrorException;

    /** {@code read(2)}; {@code size_t} and {@code ssize_t} are a {@code long} on 64-bit Linux. */
    long read(int fd, byte[] buf, long count) throws LastErrorException;

    int close(int fd) throws LastErrorException;
}
