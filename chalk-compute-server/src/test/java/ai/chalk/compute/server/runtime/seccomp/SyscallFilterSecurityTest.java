package ai.chalk.compute.server.runtime.seccomp;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What sandbox code tried in a sandbox without a filter (a user namespace with every capability in it, a tmpfs mount,
 * an nf_tables socket), and the rest of Docker's refusals, tried for real on the host as root under the filter through
 * the exec wrapper: root with every capability is a stronger test than a capability-less sandbox, since only the filter
 * stands in the way. Ordinary work (shells, pipes, threads, the JVM, git) must keep working.
 */
class SyscallFilterSecurityTest {

    private static final int EPERM = 1;
    private static final int ENOSYS = 38;
    private static final int SIGSYS_EXIT = 128 + 31;

    private static SyscallFilter filter;

    /** Python that installs an allow-everything filter on top (seccomp is allowed, as in Docker): one BPF RET ALLOW. */
    private static final String LOOSER_FILTER = """
            import ctypes, struct
            libc = ctypes.CDLL(None, use_errno=True)
            insn = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000), 8)
            prog = struct.pack("HxxxxxxQ", 1, ctypes.addressof(insn))
            assert libc.prctl(38, 1, 0, 0, 0) == 0
            assert libc.syscall(%d, 1, 0, ctypes.c_char_p(prog)) == 0, ctypes.get_errno()
            print("installed", flush=True)
            """;

    @BeforeAll
    static void compile() {
        filter = SyscallFilter.forSandboxes();
    }

    record Run(int exit, String output) {}

    private static Run run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .start();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("%s ends", command).isTrue();
        return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    private static Run filtered(String... command) throws IOException, InterruptedException {
        List<String> c = new ArrayList<>(filter.execPrefix(List.of("perl")));
        c.addAll(List.of(command));
        return run(c);
    }

    private static int nr(String name) {
        int n = LibSeccomp.seccomp_syscall_resolve_name(name);
        assertThat(n).as("the number of " + name).isNotNegative();
        return n;
    }

    /**
     * Makes each raw syscall in python (ctypes, numbers from libseccomp, arguments that would fail harmlessly even
     * without the filter) and returns the errno each got, 0 for success.
     */
    private static Map<String, Integer> errnos(boolean underFilter, Map<String, List<Long>> calls)
            throws IOException, InterruptedException {
        String probe = """
                import ctypes, sys
                libc = ctypes.CDLL(None, use_errno=True)
                for spec in sys.argv[1:]:
                    name, nr, args = spec.split(":")
                    values = [ctypes.c_long(int(a)) for a in args.split(",") if a]
                    ctypes.set_errno(0)
                    r = libc.syscall(ctypes.c_long(int(nr)), *values)
                    print(name, 0 if r >= 0 else ctypes.get_errno())
                """;
        List<String> command = new ArrayList<>(List.of("python3", "-c", probe));
        calls.forEach((name, args) -> command.add(name + ":" + nr(name.replaceAll("#.*", "")) + ":"
                + String.join(",", args.stream().map(String::valueOf).toList())));
        Run r = underFilter ? filtered(command.toArray(String[]::new)) : run(command);
        assertThat(r.exit()).as(r.output()).isZero();
        Map<String, Integer> result = new LinkedHashMap<>();
        r.output().lines().map(l -> l.split(" ")).forEach(w -> result.put(w[0], Integer.parseInt(w[1])));
        return result;
    }

    @Test
    void aNewUserNamespaceIsRefusedEvenToRoot() throws Exception {
        assertThat(run(List.of("unshare", "-U", "true")).exit())
                .as("root may without the filter")
                .isZero();
        Run r = filtered("unshare", "-U", "true");
        assertThat(r.exit()).isNotZero();
        assertThat(r.output()).contains("Operation not permitted");
        Run child = filtered("sh", "-c", "unshare -U true || echo refused to the child too");
        assertThat(child.output()).contains("refused to the child too");
        Run looser = filtered(
                "python3",
                "-c",
                LOOSER_FILTER.formatted(nr("seccomp")) + "import os; os.execvp('unshare', ['unshare', '-U', 'true'])");
        assertThat(looser.output())
                .as("a second, allow-all filter lifts nothing")
                .contains("installed", "Operation not permitted");
        Run clone = filtered(
                "perl", "-e", "syscall(" + nr("clone") + ", 0x10000011, 0, 0, 0, 0) < 0 or exit 3;" + " print $! + 0");
        assertThat(clone.output()).as("clone(CLONE_NEWUSER)").isEqualTo(Integer.toString(EPERM));
    }

    @Test
    void noOtherNamespaceCanBeCreatedOrEntered() throws Exception {
        for (String flag : List.of("-m", "-n", "-p", "-i", "-u", "-C", "-T")) {
            Run r = filtered("unshare", flag, "--fork", "true");
            assertThat(r.exit()).as("unshare " + flag + ": " + r.output()).isNotZero();
            assertThat(r.output()).contains("Operation not permitted");
        }
        String self = Long.toString(ProcessHandle.current().pid());
        assertThat(run(List.of("nsenter", "--target", self, "--mount", "true")).exit())
                .as("root may")
                .isZero();
        Run enter = filtered("nsenter", "--target", self, "--mount", "true");
        assertThat(enter.exit()).as(enter.output()).isNotZero();
        assertThat(enter.output()).contains("Operation not permitted");
    }

    @Test
    void tmpfsCannotBeMountedNorAnythingUnmounted(@TempDir Path dir) throws Exception {
        Run r = filtered("mount", "-t", "tmpfs", "none", dir.toString());
        assertThat(r.exit()).as(r.output()).isNotZero();
        assertThat(Files.readString(Path.of("/proc/self/mountinfo"))).doesNotContain(dir.toString());
        Map<String, List<Long>> calls = new LinkedHashMap<>();
        for (String name : List.of(
                "mount",
                "umount2",
                "pivot_root",
                "chroot",
                "move_mount",
                "open_tree",
                "fsopen",
                "fsmount",
                "fsconfig",
                "fspick",
                "mount_setattr")) {
            calls.put(name, List.of(0L, 0L, 0L, 0L, 0L));
        }
        assertThat(errnos(true, calls))
                .allSatisfy((name, errno) -> assertThat(errno).as(name).isEqualTo(EPERM));
    }

    @Test
    void theKernelInterfacesOfExploitsAreRefused() throws Exception {
        Map<String, List<Long>> calls = new LinkedHashMap<>();
        calls.put("keyctl", List.of(0L, -3L, 0L, 0L, 0L)); // KEYCTL_GET_KEYRING_ID of the session keyring
        calls.put("add_key", List.of(0L, 0L, 0L, 0L, 0L));
        calls.put("request_key", List.of(0L, 0L, 0L, 0L));
        calls.put("bpf", List.of(0L, 0L, 0L));
        calls.put("userfaultfd", List.of(0L));
        calls.put("perf_event_open", List.of(0L, 0L, -1L, -1L, 0L));
        calls.put("io_uring_setup", List.of(1L, 0L));
        calls.put("io_uring_enter", List.of(-1L, 0L, 0L, 0L, 0L, 0L));
        calls.put("io_uring_register", List.of(-1L, 0L, 0L, 0L));
        Map<String, Integer> unfiltered = errnos(false, calls);
        assertThat(unfiltered)
                .as("root reaches each without the filter: the refusals below are the filter's")
                .allSatisfy((name, errno) -> assertThat(errno).as(name).isNotEqualTo(EPERM));
        assertThat(errnos(true, calls))
                .allSatisfy((name, errno) -> assertThat(errno).as(name).isEqualTo(EPERM));
    }

    @Test
    void modulesKexecRebootSwapAccountingClocksAndTheKernelLogAreRefused() throws Exception {
        Map<String, List<Long>> calls = new LinkedHashMap<>();
        for (String name : List.of(
                "init_module",
                "finit_module",
                "delete_module",
                "kexec_load",
                "kexec_file_load",
                "reboot",
                "swapon",
                "swapoff",
                "acct",
                "settimeofday",
                "clock_settime",
                "clock_adjtime",
                "adjtimex",
                "syslog",
                "quotactl",
                "lookup_dcookie",
                "nfsservctl",
                "iopl",
                "ioperm",
                "fanotify_init",
                "open_by_handle_at",
                "name_to_handle_at",
                "setns",
                "unshare",
                "sethostname",
                "vhangup",
                "process_madvise",
                "pidfd_getfd",
                "kcmp")) {
            calls.put(name, List.of(-1L, 0L, 0L, 0L, 0L));
        }
        assertThat(errnos(true, calls))
                .allSatisfy((name, errno) -> assertThat(errno).as(name).isEqualTo(EPERM));
    }

    @Test
    void clone3FailsAsUnimplementedSoThatLibcFallsBackToClone() throws Exception {
        assertThat(errnos(true, Map.of("clone3", List.of(0L, 0L)))).containsEntry("clone3", ENOSYS);
    }

    @Test
    void onlyDockersPersonalitiesAreAllowed() throws Exception {
        Map<String, List<Long>> calls = new LinkedHashMap<>();
        calls.put("personality#query", List.of(0xffffffffL));
        calls.put("personality#linux", List.of(0L));
        calls.put("personality#norandom", List.of(0x0040000L));
        calls.put("personality#readimpliesexec", List.of(0x0400000L));
        calls.put("personality#highbits", List.of(0x1_0000_0000L));
        assertThat(errnos(true, calls))
                .containsEntry("personality#query", 0)
                .containsEntry("personality#linux", 0)
                .containsEntry("personality#norandom", EPERM)
                .containsEntry("personality#readimpliesexec", EPERM)
                .containsEntry("personality#highbits", EPERM);
    }

    @Test
    void terminalInjectionIsRefusedWhateverTheHighBitsOfTheRequest() throws Exception {
        String probe = """
                import ctypes, fcntl, os, pty, termios
                libc = ctypes.CDLL(None, use_errno=True)
                master, slave = pty.openpty()
                c = ctypes.c_char(b"x")
                for name, req in (("TIOCSTI", 0x5412), ("TIOCSTI-high", 0x1_0000_5412), ("TIOCLINUX", 0x541C),
                                  ("TIOCGWINSZ", termios.TIOCGWINSZ)):
                    ctypes.set_errno(0)
                    buf = ctypes.create_string_buffer(8)
                    arg = ctypes.byref(c) if name.startswith("TIOCSTI") else buf
                    r = libc.ioctl(slave, ctypes.c_ulong(req), arg)
                    print(name, 0 if r >= 0 else ctypes.get_errno())
                """;
        Run r = filtered("python3", "-c", probe);
        assertThat(r.output()).contains("TIOCSTI 1\n", "TIOCSTI-high 1\n", "TIOCLINUX 1\n", "TIOCGWINSZ 0\n");
    }

    @Test
    void netfilterAndCryptoSocketsAreRefusedOrdinaryOnesWork() throws Exception {
        String probe = """
                import socket
                def tryit(name, *args):
                    try:
                        socket.socket(*args).close(); print(name, 0)
                    except OSError as e:
                        print(name, e.errno)
                tryit("netfilter", socket.AF_NETLINK, socket.SOCK_RAW, 12)
                tryit("xfrm", socket.AF_NETLINK, socket.SOCK_RAW, 6)
                tryit("crypto", socket.AF_NETLINK, socket.SOCK_RAW, 21)
                tryit("alg", 38, socket.SOCK_SEQPACKET, 0)
                tryit("vsock", 40, socket.SOCK_STREAM, 0)
                tryit("route", socket.AF_NETLINK, socket.SOCK_RAW, 0)
                tryit("diag", socket.AF_NETLINK, socket.SOCK_RAW, 4)
                tryit("inet", socket.AF_INET, socket.SOCK_STREAM, 0)
                tryit("inet6", socket.AF_INET6, socket.SOCK_DGRAM, 0)
                tryit("unix", socket.AF_UNIX, socket.SOCK_STREAM, 0)
                tryit("packet", socket.AF_PACKET, socket.SOCK_RAW, 0)
                """;
        Run r = filtered("python3", "-c", probe);
        assertThat(r.output())
                .contains(
                        "netfilter 1\n",
                        "xfrm 1\n",
                        "crypto 1\n",
                        "alg 1\n",
                        "vsock 1\n",
                        "route 0\n",
                        "diag 0\n",
                        "inet 0\n",
                        "inet6 0\n",
                        "unix 0\n");
        // AF_ALG with a high bit set is still AF_ALG to the kernel (it reads an int)
        Map<String, List<Long>> calls = new LinkedHashMap<>();
        calls.put("socket#alg-high", List.of(0x1_0000_0026L, 5L, 0L));
        calls.put("socket#netfilter-high", List.of(0x1_0000_0010L, 3L, 12L));
        assertThat(errnos(true, calls))
                .containsEntry("socket#alg-high", EPERM)
                .containsEntry("socket#netfilter-high", EPERM);
    }

    @Test
    void aSyscallThroughAnotherAbiKillsTheProcess() throws Exception {
        // x32: the native entry with bit 30 set (getpid); libseccomp's x86_64 filter treats it as a bad ABI
        Run x32 = filtered("perl", "-e", "syscall(0x40000000 | " + nr("getpid") + "); print qq(survived\\n)");
        assertThat(x32.exit()).as(x32.output()).isEqualTo(SIGSYS_EXIT);
        // i386: int 0x80 from a page of machine code (mov eax, 20 = getpid; int 0x80; ret)
        String i386 = """
                import ctypes, mmap, os
                m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
                m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))
                f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
                print("getpid", f(), os.getpid())
                """;
        Run plain = run(List.of("python3", "-c", i386));
        assertThat(plain.output())
                .as("the i386 ABI works here without the filter")
                .startsWith("getpid ");
        Run r = filtered("python3", "-c", i386);
        assertThat(r.exit()).as(r.output()).isEqualTo(SIGSYS_EXIT);
    }

    @Test
    void ordinaryProgramsKeepWorking() throws Exception {
        assertThat(filtered("sh", "-c", "echo hi | cat")).isEqualTo(new Run(0, "hi\n"));
        assertThat(filtered("sh", "-c", "(exit 3); echo $?; /bin/true & wait $!; echo waited"))
                .isEqualTo(new Run(0, "3\nwaited\n"));
        assertThat(filtered("ls", "/").output()).contains("usr");
        assertThat(filtered("date").exit()).isZero();
        assertThat(filtered("git", "--version").output()).startsWith("git version");
        Run py = filtered("python3", "-c", """
                import os, subprocess, threading, socket
                out = []
                t = threading.Thread(target=lambda: out.append(subprocess.run(["echo", "from-thread"],
                    capture_output=True, text=True).stdout))
                t.start(); t.join()
                print(out[0].strip(), os.cpu_count() > 0, socket.gethostname() != "")
                """);
        assertThat(py).isEqualTo(new Run(0, "from-thread True True\n"));
    }

    @Test
    void theJvmStartsThreadsAndProcessesThroughTheCloneFallback() throws Exception {
        Run version = filtered("java", "-version");
        assertThat(version.exit()).as(version.output()).isZero();
        assertThat(version.output()).contains("version");
        Run jshellLike =
                filtered("java", "-XX:+UseParallelGC", "-XX:ParallelGCThreads=4", "-XX:+PrintFlagsFinal", "-version");
        assertThat(jshellLike.exit()).isZero();
        assertThat(jshellLike.output()).contains("ParallelGCThreads");
    }

    @Test
    void debuggersStillWorkAsInDocker() throws Exception {
        Run r = filtered(
                "perl",
                "-e",
                "my $pid = fork; if (!$pid) { sleep 5; exit 0 }"
                        + " my $rc = syscall(" + nr("ptrace")
                        + ", 16, $pid, 0, 0); print $rc == 0 ? 'attached' : $! + 0;"
                        + " kill 9, $pid");
        assertThat(r.output()).isEqualTo("attached");
    }

    /**
     * Why the wrapper goes before the capability drop: ptrace is allowed, and the kernel refuses a tracer without the
     * target's capabilities, so only a process that is capability-less and still unfiltered can be hijacked.
     */
    @Test
    void sandboxCodeCannotTraceAProcessThatStillHoldsCapabilities() throws Exception {
        Process privileged = new ProcessBuilder("sleep", "60").start();
        Process dropped =
                new ProcessBuilder("setpriv", "--bounding-set=-all", "--inh-caps=-all", "--", "sleep", "60").start();
        try {
            Thread.sleep(300); // setpriv has executed sleep
            String attach = "my $rc = syscall(" + nr("ptrace") + ", 16, $ARGV[0] + 0, 0, 0);"
                    + " print $rc == 0 ? 'attached' : $! + 0; syscall(" + nr("ptrace") + ", 17, $ARGV[0] + 0, 0, 0);";
            List<String> sandboxCode = List.of(
                    "setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--", "perl", "-e", attach);
            assertThat(filtered(concat(sandboxCode, Long.toString(privileged.pid()))
                                    .toArray(String[]::new))
                            .output())
                    .isEqualTo(Integer.toString(EPERM));
            assertThat(filtered(concat(sandboxCode, Long.toString(dropped.pid()))
                                    .toArray(String[]::new))
                            .output())
                    .as("an unfiltered process without capabilities is what must never exist in a sandbox")
                    .isEqualTo("attached");
        } finally {
            privileged.destroyForcibly();
            dropped.destroyForcibly();
        }
    }

    @Test
    void theWrapperRunsBeforeTheCapabilityDropAndEverythingAfterItIsFiltered() throws Exception {
        List<String> drop = List.of("setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--");
        List<String> ok = new ArrayList<>(drop);
        ok.addAll(List.of("env", "-i", "sh", "-c", "grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status"));
        Run status = filtered(ok.toArray(String[]::new));
        assertThat(status.exit()).as(status.output()).isZero();
        assertThat(status.output()).contains("NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000");
        List<String> escape = new ArrayList<>(drop);
        escape.addAll(List.of("unshare", "-U", "true"));
        assertThat(filtered(escape.toArray(String[]::new)).exit()).isNotZero();
    }

    @Test
    void aFailedInstallRunsNothing() throws Exception {
        List<String> c = new ArrayList<>(ExecWrapper.prefix(List.of("perl"), nr("prctl"), nr("seccomp"), "00")
                .words());
        c.addAll(List.of("sh", "-c", "echo ran"));
        Run r = run(c);
        assertThat(r.exit()).isEqualTo(125);
        assertThat(r.output())
                .contains("cannot install the sandbox's syscall filter")
                .doesNotContain("ran");
    }

    @Test
    void theProgramFitsTheKernelsLimitAndBuildsQuickly() {
        long start = System.nanoTime();
        SyscallFilter again = SyscallFilter.forSandboxes();
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertThat(again.program()).isEqualTo(filter.program());
        assertThat(again.instructions()).isBetween(100, 4096);
        assertThat(again.absent()).contains("chown32", "socketcall").doesNotContain("statmount", "mseal", "ioctl");
        System.out.printf(
                "syscall filter: %d rules, %d instructions, %d bytes, built in %d ms%n",
                again.rules(), again.instructions(), again.program().length, millis);
    }

    @Test
    void bubblewrapAppliesTheExportedProgram(@TempDir Path stateDir) throws Exception {
        Path file = filter.writeTo(stateDir);
        assertThat(Files.readAllBytes(file)).isEqualTo(filter.program());
        List<String> bwrap = List.of(
                "bwrap",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--unshare-pid",
                "--die-with-parent",
                "--seccomp",
                "3");
        Run escape = run(SyscallFilter.withFileOn(3, file, concat(bwrap, "unshare", "-U", "true")));
        assertThat(escape.exit()).as(escape.output()).isNotZero();
        assertThat(escape.output()).contains("Operation not permitted");
        Run work = run(
                SyscallFilter.withFileOn(
                        3,
                        file,
                        concat(
                                bwrap,
                                "sh",
                                "-c",
                                "echo hi | cat; test -e /proc/self/fd/3 && echo descriptor 3 leaked; grep Seccomp: /proc/self/status")));
        assertThat(work).isEqualTo(new Run(0, "hi\nSeccomp:\t2\n"));
    }

    private static List<String> concat(List<String> head, String... tail) {
        List<String> all = new ArrayList<>(head);
        all.addAll(List.of(tail));
        return all;
    }
}
