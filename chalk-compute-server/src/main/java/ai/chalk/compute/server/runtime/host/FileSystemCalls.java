package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;

/** The libc calls behind {@link SandboxDevices} and {@link LayerQuota}: device nodes and mounts, without a process. */
interface FileSystemCalls extends Library {

    FileSystemCalls INSTANCE = Native.load("c", FileSystemCalls.class);

    long MS_NOSUID = 2;
    long MS_NODEV = 4;
    long MS_NOEXEC = 8;
    int MNT_DETACH = 2;
    int S_IFCHR = 0020000;

    int mknod(String path, int mode, long dev) throws LastErrorException;

    int mount(String source, String target, String type, long flags, String data) throws LastErrorException;

    int umount2(String target, int flags) throws LastErrorException;

    /** {@code struct statvfs} into {@code buf} (112 bytes on 64-bit Linux; give it more). */
    int statvfs(String path, com.sun.jna.Pointer buf) throws LastErrorException;

    /** Detaches what is mounted at {@code dir}; quiet when nothing is mounted there (EINVAL) or it is gone (ENOENT). */
    static void detach(java.nio.file.Path dir) {
        try {
            INSTANCE.umount2(dir.toString(), MNT_DETACH);
        } catch (LastErrorException e) {
            // nothing to detach
        }
    }
}
