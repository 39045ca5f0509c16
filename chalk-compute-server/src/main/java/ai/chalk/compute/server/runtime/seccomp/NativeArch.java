package ai.chalk.compute.server.runtime.seccomp;

import java.util.List;
import java.util.Map;

/**
 * The architectures the filter is built for, with what differs between them: the arch-only syscalls Docker's profile
 * allows, and the numbers of syscalls newer than Debian 12's libseccomp (2.5.4) knows by name. Syscalls from 424 on
 * have one number on every architecture, which is why the table holds numbers and not per-arch lookups.
 */
enum NativeArch {
    X86_64(0xC000003E, List.of("arch_prctl", "modify_ldt"), Map.of("uretprobe", 335)),
    AARCH64(
            0xC00000B7,
            List.of(
                    "arm_fadvise64_64",
                    "arm_sync_file_range",
                    "sync_file_range2",
                    "breakpoint",
                    "cacheflush",
                    "set_tls"),
            Map.of());

    /** Syscalls of Linux 6.6 to 6.13 that Docker's profile allows to a container without capabilities. */
    private static final Map<String, Integer> NEWER = Map.ofEntries(
            Map.entry("cachestat", 451),
            Map.entry("fchmodat2", 452),
            Map.entry("map_shadow_stack", 453),
            Map.entry("futex_wake", 454),
            Map.entry("futex_wait", 455),
            Map.entry("futex_requeue", 456),
            Map.entry("statmount", 457),
            Map.entry("listmount", 458),
            Map.entry("mseal", 462),
            Map.entry("setxattrat", 463),
            Map.entry("getxattrat", 464),
            Map.entry("listxattrat", 465),
            Map.entry("removexattrat", 466));

    private final int auditArch;
    private final List<String> archSyscalls;
    private final Map<String, Integer> archNewer;

    NativeArch(int auditArch, List<String> archSyscalls, Map<String, Integer> archNewer) {
        this.auditArch = auditArch;
        this.archSyscalls = archSyscalls;
        this.archNewer = archNewer;
    }

    /** The architecture libseccomp reports for this process; only 64-bit x86 and ARM are supported. */
    static NativeArch of(int scmpArch) {
        for (NativeArch a : values()) {
            if (a.auditArch == scmpArch) {
                return a;
            }
        }
        throw new IllegalStateException(String.format(
                "the sandbox syscall filter supports x86_64 and aarch64 only,"
                        + " not the architecture with audit token 0x%08x",
                scmpArch));
    }

    /** The syscalls only this architecture has that Docker's profile allows. */
    List<String> archSyscalls() {
        return archSyscalls;
    }

    /** The number of a syscall libseccomp 2.5.4 does not know by name, or -1 if this architecture has none. */
    int newerSyscall(String name) {
        Integer n = archNewer.containsKey(name) ? archNewer.get(name) : NEWER.get(name);
        return n == null ? -1 : n;
    }
}
