package ai.chalk.compute.server.runtime.seccomp;

import java.util.List;

/**
 * One rule of the filter: when a syscall is made with arguments matching every condition, allow it or fail it with
 * an errno. Several rules on one syscall are alternatives, and they share one action (see {@link ArgValues}).
 *
 * @param syscall    the syscall's name, as libseccomp and the kernel spell it
 * @param errno      0 to allow, else the errno the call fails with
 * @param conditions what the arguments must be (all of them), empty for any call
 */
record SyscallRule(String syscall, int errno, List<ArgCondition> conditions) {

    SyscallRule {
        conditions = List.copyOf(conditions);
        if (errno < 0 || errno > 4095) {
            throw new IllegalArgumentException("not an errno: " + errno);
        }
    }

    static SyscallRule allow(String syscall, ArgCondition... conditions) {
        return new SyscallRule(syscall, 0, List.of(conditions));
    }

    static SyscallRule fail(String syscall, int errno) {
        return new SyscallRule(syscall, errno, List.of());
    }
}
