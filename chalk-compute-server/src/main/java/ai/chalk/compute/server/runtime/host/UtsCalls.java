package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;

/** The libc calls that rename a sandbox's host: joining its UTS namespace with one thread and back. */
interface UtsCalls extends Library {

    UtsCalls INSTANCE = Native.load("c", UtsCalls.class);

    int O_RDONLY = 0;
    int O_CLOEXEC = 0x80000;
    int CLONE_NEWUTS = 0x0400_0000;

    int open(String path, int flags) throws LastErrorException;

    int close(int fd) throws LastErrorException;

    int setns(int fd, int nstype) throws LastErrorException;

    int sethostname(byte[] name, long len) throws LastErrorException;
}
