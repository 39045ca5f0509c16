package ai.chalk.compute.server.runtime.seccomp;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;

/** An anonymous in-memory file for libseccomp to export into: libseccomp 2.5 writes only to a descriptor. */
interface MemFd extends Library {

    MemFd INSTANCE = Native.load("c", MemFd.class);

    int MFD_CLOEXEC = 1;

    int memfd_create(String name, int flags) throws LastErrorException;

    int close(int fd) throws LastErrorException;
}
