package ai.chalk.compute.server.runtime.seccomp;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What a sandbox may call: Docker's default seccomp profile (moby/profiles {@code default.json}) as it applies to a
 * container without capabilities on a kernel of 4.8 or newer, which is what a local sandbox is. Its shape is Docker's:
 * every syscall fails with EPERM unless a rule here allows it, so a syscall added to the kernel later is refused until
 * it is reviewed. Refused, among others: new namespaces ({@code unshare}, {@code setns}, {@code clone} with any
 * CLONE_NEW* flag), {@code mount} and the new mount API, {@code pivot_root}, {@code chroot}, the keyring, {@code bpf},
 * {@code userfaultfd}, {@code perf_event_open}, io_uring, kernel modules, kexec, {@code reboot}, swap, process
 * accounting, clock and time setting, {@code syslog}, {@code open_by_handle_at}, {@code quotactl}, {@code iopl},
 * {@code ioperm}, {@code fanotify_init}, {@code personality} but for Docker's five values.
 *
 * <p>Where this differs from Docker, tighter in each case:
 * <ul>
 * <li>{@code ioctl} is allowed for every request but TIOCSTI and TIOCLINUX, which push input into a terminal another
 *     process reads (the server's or a previous exec's);</li>
 * <li>{@code socket(AF_NETLINK, ...)} is allowed for the protocols ordinary programs use (route, sock_diag, audit,
 *     kobject_uevent, generic), not netfilter, xfrm, crypto and the rest, whose kernel code only privileged callers
 *     should reach; AF_ALG and AF_VSOCK are refused as in Docker;</li>
 * <li>{@code name_to_handle_at} is refused with its partner {@code open_by_handle_at};</li>
 * <li>{@code adjtimex} and {@code clock_adjtime} are refused outright: without CAP_SYS_TIME a sandbox could only read
 *     the kernel's clock discipline with them, and the filter cannot tell a read from a write (the mode is in
 *     memory).</li>
 * </ul>
 * Kept as in Docker: {@code ptrace} and {@code process_vm_readv/writev} (gdb and strace work; since Linux 4.8 a
 * tracer cannot change a syscall past the filter), which is why every process in a sandbox must be filtered before it
 * is capability-less (see {@link ExecWrapper}); {@code clone3} fails with ENOSYS, so that libc falls back to
 * {@code clone}, whose flags the filter can read ({@code clone3}'s are in memory). CLONE_NEWTIME exists only for
 * {@code unshare} and {@code clone3}, both refused.
 */
final class SandboxSyscallProfile {

    /**
     * Docker's unconditional allowlist, in its order, without {@code ioctl}, {@code name_to_handle_at},
     * {@code adjtimex} and {@code clock_adjtime} (with its 32-bit twin).
     */
    private static final String ALLOWED = """
            accept accept4 access alarm bind brk cachestat capget capset chdir chmod chown chown32
            clock_getres clock_getres_time64 clock_gettime clock_gettime64
            clock_nanosleep clock_nanosleep_time64 close close_range connect copy_file_range creat dup dup2
            dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2 epoll_wait
            epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat faccessat2 fadvise64
            fadvise64_64 fallocate fanotify_mark fchdir fchmod fchmodat fchmodat2 fchown fchown32 fchownat
            fcntl fcntl64 fdatasync fgetxattr flistxattr flock fork fremovexattr fsetxattr fstat fstat64
            fstatat64 fstatfs fstatfs64 fsync ftruncate ftruncate64 futex futex_requeue futex_time64
            futex_wait futex_waitv futex_wake futimesat getcpu getcwd getdents getdents64 getegid getegid32
            geteuid geteuid32 getgid getgid32 getgroups getgroups32 getitimer getpeername getpgid getpgrp
            getpid getppid getpriority getrandom getresgid getresgid32 getresuid getresuid32 getrlimit
            get_robust_list getrusage getsid getsockname getsockopt get_thread_area gettid gettimeofday
            getuid getuid32 getxattr getxattrat inotify_add_watch inotify_init inotify_init1
            inotify_rm_watch io_cancel io_destroy io_getevents io_pgetevents io_pgetevents_time64 ioprio_get
            ioprio_set io_setup io_submit ipc kill landlock_add_rule landlock_create_ruleset
            landlock_restrict_self lchown lchown32 lgetxattr link linkat listen listmount listxattr
            listxattrat llistxattr _llseek lremovexattr lseek lsetxattr lstat lstat64 madvise
            map_shadow_stack membarrier memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat mlock
            mlock2 mlockall mmap mmap2 mprotect mq_getsetattr mq_notify mq_open mq_timedreceive
            mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 mq_unlink mremap mseal msgctl msgget
            msgrcv msgsnd msync munlock munlockall munmap nanosleep newfstatat _newselect open openat
            openat2 pause pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc pkey_free pkey_mprotect poll
            ppoll ppoll_time64 prctl pread64 preadv preadv2 prlimit64 process_mrelease pselect6
            pselect6_time64 pwrite64 pwritev pwritev2 read readahead readlink readlinkat readv recv recvfrom
            recvmmsg recvmmsg_time64 recvmsg remap_file_pages removexattr removexattrat rename renameat
            renameat2 restart_syscall riscv_hwprobe rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask
            rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait rt_sigtimedwait_time64
            rt_tgsigqueueinfo sched_getaffinity sched_getattr sched_getparam sched_get_priority_max
            sched_get_priority_min sched_getscheduler sched_rr_get_interval sched_rr_get_interval_time64
            sched_setaffinity sched_setattr sched_setparam sched_setscheduler sched_yield seccomp select
            semctl semget semop semtimedop semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg
            sendto setfsgid setfsgid32 setfsuid setfsuid32 setgid setgid32 setgroups setgroups32 setitimer
            setpgid setpriority setregid setregid32 setresgid setresgid32 setresuid setresuid32 setreuid
            setreuid32 setrlimit set_robust_list setsid setsockopt set_thread_area set_tid_address setuid
            setuid32 setxattr setxattrat shmat shmctl shmdt shmget shutdown sigaltstack signalfd signalfd4
            sigprocmask sigreturn socketcall socketpair splice stat stat64 statfs statfs64 statmount statx
            symlink symlinkat sync sync_file_range syncfs sysinfo tee tgkill time timer_create timer_delete
            timer_getoverrun timer_gettime timer_gettime64 timer_settime timer_settime64 timerfd_create
            timerfd_gettime timerfd_gettime64 timerfd_settime timerfd_settime64 times tkill truncate
            truncate64 ugetrlimit umask uname unlink unlinkat uretprobe utime utimensat utimensat_time64
            utimes vfork vmsplice wait4 waitid waitpid write writev
            """;

    /** Allowed by Docker from Linux 4.8 on, when seccomp runs after ptrace's syscall changes. */
    private static final List<String> TRACING = List.of("ptrace", "process_vm_readv", "process_vm_writev");

    private static final int AF_NETLINK = 16;
    private static final int AF_ALG = 38;
    private static final int AF_NFC = 39;
    private static final int AF_VSOCK = 40;
    /** NETLINK_ROUTE, NETLINK_SOCK_DIAG, NETLINK_AUDIT, NETLINK_KOBJECT_UEVENT, NETLINK_GENERIC. */
    private static final List<Integer> NETLINK_PROTOCOLS = List.of(0, 4, 9, 15, 16);

    /** Docker's personality values: PER_LINUX, PER_LINUX32, UNAME26, UNAME26|PER_LINUX32, and the query. */
    private static final List<Long> PERSONALITIES = List.of(0L, 0x8L, 0x20000L, 0x20008L, 0xffffffffL);

    /** CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: Docker's mask. */
    private static final long CLONE_NAMESPACES = 0x7E020000L;

    private static final long TIOCSTI = 0x5412;
    private static final long TIOCLINUX = 0x541C;

    private static final int ENOSYS = 38;

    private SandboxSyscallProfile() {}

    /** The rules for {@code arch}; names the architecture lacks are left to {@link SyscallFilter} to skip. */
    static List<SyscallRule> rules(NativeArch arch) {
        List<SyscallRule> rules = new ArrayList<>();
        Arrays.stream(ALLOWED.trim().split("\\s+")).forEach(name -> rules.add(SyscallRule.allow(name)));
        TRACING.forEach(name -> rules.add(SyscallRule.allow(name)));
        arch.archSyscalls().forEach(name -> rules.add(SyscallRule.allow(name)));
        rules.add(SyscallRule.allow("clone", ArgCondition.masked(0, CLONE_NAMESPACES, 0)));
        rules.add(SyscallRule.fail("clone3", ENOSYS));
        PERSONALITIES.forEach(p -> rules.add(SyscallRule.allow("personality", ArgCondition.eq(0, p))));
        ArgValues.anyBut(1, 32, TIOCSTI, TIOCLINUX).forEach(c -> rules.add(SyscallRule.allow("ioctl", c)));
        sockets(rules);
        return rules;
    }

    /** {@code CLONE_NEWUSER}, setns's namespace type for a user namespace. */
    private static final long CLONE_NEWUSER = 0x1000_0000L;

    /**
     * The rules of a sandbox's init, which joins its user namespace after the filter is in place (bubblewrap installs
     * it before the init's first program): {@link #rules} and {@code setns} into a user namespace, nothing else. Only
     * the init and the {@code sleep} it keeps have it; every process that enters the sandbox gets {@link #rules}.
     */
    static List<SyscallRule> initRules(NativeArch arch) {
        List<SyscallRule> rules = rules(arch);
        rules.add(SyscallRule.allow("setns", ArgCondition.eq(1, CLONE_NEWUSER)));
        return rules;
    }

    /**
     * The rules of an image build's steps: {@link #initRules} (a step's static {@code nsenter} joins its user namespace
     * under the filter) and {@code chroot}, which the step's {@code CAP_SYS_CHROOT} is for, as under Docker's default
     * profile. Steps ran with no filter at all: one could make a user namespace of its own and reach, with
     * capabilities there, the kernel's netfilter, io_uring, keyrings and the rest a sandbox is kept from.
     */
    static List<SyscallRule> buildStepRules(NativeArch arch) {
        List<SyscallRule> rules = initRules(arch);
        rules.add(SyscallRule.allow("chroot"));
        return rules;
    }

    private static void sockets(List<SyscallRule> rules) {
        rules.add(SyscallRule.allow("socket", ArgCondition.le(0, AF_NETLINK - 1)));
        NETLINK_PROTOCOLS.forEach(
                p -> rules.add(SyscallRule.allow("socket", ArgCondition.eq(0, AF_NETLINK), ArgCondition.eq(2, p))));
        ArgValues.between(0, AF_NETLINK + 1, AF_ALG - 1).forEach(c -> rules.add(SyscallRule.allow("socket", c)));
        rules.add(SyscallRule.allow("socket", ArgCondition.eq(0, AF_NFC)));
        // Docker allows "greater than AF_VSOCK", but a comparison sees 64 bits and the kernel reads an int:
        // 0x1_0000_0026 is greater and still AF_ALG. A range checks every bit: the kernel knows 46 families today
        ArgValues.between(0, AF_VSOCK + 1, 63).forEach(c -> rules.add(SyscallRule.allow("socket", c)));
    }
}
