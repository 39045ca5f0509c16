package ai.chalk.compute.server.runtime.seccomp;

import com.sun.jna.Native;
import com.sun.jna.Pointer;

/**
 * The part of Debian's {@code libseccomp.so.2} (2.5) the filter is built with, bound directly (JNA direct mapping:
 * a filter is some 400 calls, which an interface proxy makes several times slower). Calls return 0 or a negative
 * errno; {@link #seccomp_init} returns null on failure.
 */
final class LibSeccomp {

    static final int ACT_KILL_PROCESS = 0x80000000;
    static final int ACT_ALLOW = 0x7fff0000;
    static final int ACT_ERRNO = 0x00050000;

    static final int ATTR_ACT_BADARCH = 2;
    static final int ATTR_CTL_OPTIMIZE = 8;

    /** What {@link #seccomp_syscall_resolve_name} returns for a name it does not know on any architecture. */
    static final int NR_SCMP_ERROR = -1;

    /** The size of {@code struct scmp_arg_cmp}: unsigned int arg, enum op, two 64-bit datums. */
    static final int ARG_CMP_SIZE = 24;

    private static final String PROBLEM;

    static {
        String problem = null;
        try {
            Native.register(LibSeccomp.class, "libseccomp.so.2");
        } catch (UnsatisfiedLinkError e) {
            problem = "the sandbox syscall filter needs libseccomp 2.5 or newer (apt-get install libseccomp2): "
                    + e.getMessage();
        }
        PROBLEM = problem;
    }

    private LibSeccomp() {}

    /** Fails, saying which package brings the library, when it could not be loaded. */
    static void requireLoaded() {
        if (PROBLEM != null) {
            throw new IllegalStateException(PROBLEM);
        }
    }

    static native Pointer seccomp_init(int defaultAction);

    static native void seccomp_release(Pointer ctx);

    static native int seccomp_arch_native();

    static native int seccomp_attr_set(Pointer ctx, int attr, int value);

    static native int seccomp_syscall_resolve_name(String name);

    static native int seccomp_rule_add_array(Pointer ctx, int action, int syscall, int argCount, Pointer args);

    static native int seccomp_export_bpf(Pointer ctx, int fd);
}
