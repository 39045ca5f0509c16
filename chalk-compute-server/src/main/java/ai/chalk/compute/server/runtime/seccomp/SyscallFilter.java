package ai.chalk.compute.server.runtime.seccomp;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The sandbox syscall filter ({@link SandboxSyscallProfile}) compiled by libseccomp into a classic BPF program for
 * this machine's architecture, the only one it admits: a syscall made through another ABI (i386 {@code int 0x80} or
 * x32 on x86_64, arm32 on aarch64) kills the whole process, where a rule about the native syscall of the same number
 * would be wrong. Build it once per server start; it is immutable.
 *
 * <p>Two ways to apply it: bubblewrap's {@code --seccomp FD} reads the program {@link #writeTo written} to a file
 * (open it on that descriptor for bwrap), and {@link #execPrefix} puts a process that enters a running sandbox under
 * it, which it must be since a filter is inherited only through fork and exec, not through {@code nsenter}.
 */
public final class SyscallFilter {

    /** The file {@link #writeTo} writes. */
    public static final String FILE_NAME = "seccomp.bpf";

    private static final int EPERM = 1;
    /** libseccomp's optimisation level 2: a binary tree of syscall numbers instead of a list. */
    private static final int BINARY_TREE = 2;

    private final byte[] program;
    private final int rules;
    private final List<String> absent;
    private final NativeArch arch;
    private final int prctl;
    private final int seccomp;

    private SyscallFilter(byte[] program, int rules, List<String> absent, NativeArch arch, int prctl, int seccomp) {
        this.program = program;
        this.rules = rules;
        this.absent = List.copyOf(absent);
        this.arch = arch;
        this.prctl = prctl;
        this.seccomp = seccomp;
    }

    /**
     * Compiles the sandbox profile. Fails with {@link IllegalStateException} saying what to install or use when the
     * host has no libseccomp 2.5 or is neither x86_64 nor aarch64.
     */
    public static SyscallFilter forSandboxes() {
        return compile(SandboxSyscallProfile::rules);
    }

    /**
     * The filter of a sandbox's init: {@link #forSandboxes} and {@code setns} into a user namespace, which the init
     * joins under the filter (see SandboxSyscallProfile#initRules).
     */
    public static SyscallFilter forSandboxInits() {
        return compile(SandboxSyscallProfile::initRules);
    }

    /** The filter of an image build's steps (see SandboxSyscallProfile#buildStepRules). */
    public static SyscallFilter forBuildSteps() {
        return compile(SandboxSyscallProfile::buildStepRules);
    }

    private static SyscallFilter compile(java.util.function.Function<NativeArch, List<SyscallRule>> profile) {
        LibSeccomp.requireLoaded();
        NativeArch arch = NativeArch.of(LibSeccomp.seccomp_arch_native());
        Pointer ctx = LibSeccomp.seccomp_init(LibSeccomp.ACT_ERRNO | EPERM);
        if (ctx == null) {
            throw new IllegalStateException("libseccomp could not start a filter (seccomp_init failed)");
        }
        try {
            check(
                    LibSeccomp.seccomp_attr_set(ctx, LibSeccomp.ATTR_ACT_BADARCH, LibSeccomp.ACT_KILL_PROCESS),
                    "set the bad-ABI action");
            check(
                    LibSeccomp.seccomp_attr_set(ctx, LibSeccomp.ATTR_CTL_OPTIMIZE, BINARY_TREE),
                    "choose the binary tree");
            int added = 0;
            List<String> absent = new ArrayList<>();
            for (SyscallRule rule : profile.apply(arch)) {
                int nr = number(arch, rule.syscall());
                if (nr < 0) {
                    if (!absent.contains(rule.syscall())) {
                        absent.add(rule.syscall());
                    }
                    continue;
                }
                int action = rule.errno() == 0 ? LibSeccomp.ACT_ALLOW : LibSeccomp.ACT_ERRNO | rule.errno();
                check(
                        LibSeccomp.seccomp_rule_add_array(
                                ctx, action, nr, rule.conditions().size(), conditions(rule)),
                        "add the rule " + rule);
                added++;
            }
            return new SyscallFilter(
                    export(ctx), added, absent, arch, require(arch, "prctl"), require(arch, "seccomp"));
        } finally {
            LibSeccomp.seccomp_release(ctx);
        }
    }

    /**
     * The syscall's number on {@code arch}, or a negative number when it has none there: libseccomp answers a
     * negative pseudo number for a syscall of other architectures only ({@code chown32} on x86_64) and -1 for a
     * name it does not know, which may be a syscall newer than it.
     */
    private static int number(NativeArch arch, String name) {
        int nr = LibSeccomp.seccomp_syscall_resolve_name(name);
        return nr == LibSeccomp.NR_SCMP_ERROR ? arch.newerSyscall(name) : nr;
    }

    private static int require(NativeArch arch, String name) {
        int nr = number(arch, name);
        if (nr < 0) {
            throw new IllegalStateException("libseccomp knows no " + name + " syscall on " + arch);
        }
        return nr;
    }

    private static Pointer conditions(SyscallRule rule) {
        List<ArgCondition> cs = rule.conditions();
        if (cs.isEmpty()) {
            return null;
        }
        Memory m = new Memory((long) LibSeccomp.ARG_CMP_SIZE * cs.size());
        for (int i = 0; i < cs.size(); i++) {
            long at = (long) LibSeccomp.ARG_CMP_SIZE * i;
            ArgCondition c = cs.get(i);
            m.setInt(at, c.arg());
            m.setInt(at + 4, c.op().code);
            m.setLong(at + 8, c.datumA());
            m.setLong(at + 16, c.datumB());
        }
        return m;
    }

    /** libseccomp 2.5 exports only to a descriptor: an anonymous memory file, read back through /proc. */
    private static byte[] export(Pointer ctx) {
        int fd;
        try {
            fd = MemFd.INSTANCE.memfd_create("chalk-seccomp", MemFd.MFD_CLOEXEC);
        } catch (LastErrorException e) {
            throw new IllegalStateException(
                    "cannot create a memory file for the syscall filter: errno " + e.getErrorCode(), e);
        }
        try {
            check(LibSeccomp.seccomp_export_bpf(ctx, fd), "export the program");
            return Files.readAllBytes(Path.of("/proc/self/fd/" + fd));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the exported syscall filter back", e);
        } finally {
            MemFd.INSTANCE.close(fd);
        }
    }

    private static void check(int rc, String what) {
        if (rc < 0) {
            throw new IllegalStateException("libseccomp could not " + what + ": errno " + -rc);
        }
    }

    /** The BPF program: {@link #instructions()} {@code struct sock_filter}s of 8 bytes, in the machine's byte order. */
    public byte[] program() {
        return program.clone();
    }

    /** How many instructions the program has (the kernel accepts up to 4096). */
    public int instructions() {
        return program.length / 8;
    }

    /** How many libseccomp rules it was built from. */
    public int rules() {
        return rules;
    }

    /** The profile's syscalls this architecture does not have (32-bit ones, the other architecture's). */
    public List<String> absent() {
        return absent;
    }

    /**
     * Writes the program to {@value #FILE_NAME} in {@code dir} (replacing it at once: a reader never sees half a
     * program) and returns the file, for bubblewrap's {@code --seccomp}.
     */
    public Path writeTo(Path dir) throws IOException {
        return writeTo(dir, FILE_NAME);
    }

    /** As {@link #writeTo(Path)}, to the file {@code name}. */
    public Path writeTo(Path dir, String name) throws IOException {
        Path file = dir.resolve(name);
        Path partial = Files.createTempFile(dir, name, ".partial");
        try {
            Files.write(partial, program);
            Files.setPosixFilePermissions(partial, PosixFilePermissions.fromString("rw-r--r--"));
            Files.move(partial, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(partial);
        }
        return file;
    }

    /**
     * {@code command} started with {@code file} (see {@link #writeTo}) open for reading on descriptor {@code fd}, which
     * Java cannot hand a child itself: {@code /bin/sh -c 'f=$1; shift; exec "$@" FD<"$f"' chalk-seccomp FILE COMMAND...}.
     * For bubblewrap, whose command then says {@code --seccomp FD} (bubblewrap closes it once read).
     */
    public static List<String> withFileOn(int fd, Path file, List<String> command) {
        if (fd < 3 || fd > 9) {
            throw new IllegalArgumentException(
                    "use a descriptor from 3 to 9 (0 to 2 are the standard streams), not " + fd);
        }
        List<String> words = new ArrayList<>(List.of(
                "/bin/sh", "-c", "f=$1; shift; exec \"$@\" " + fd + "<\"$f\"", "chalk-seccomp", file.toString()));
        words.addAll(command);
        return words;
    }

    /**
     * The words to put before a command so that it runs under this filter: see {@link ExecWrapper}.
     *
     * @param perl the perl interpreter as words (a path, or the loader and a path in an image sandbox)
     */
    public List<String> execPrefix(List<String> perl) {
        return execPrefixParts(perl).words();
    }

    /**
     * The number of syscall {@code name} on the architecture this filter was built for, for a helper that makes the
     * call itself (perl's {@code syscall}).
     *
     * @throws IllegalStateException when libseccomp knows no such syscall here
     */
    public int syscallNumber(String name) {
        return require(arch, name);
    }

    /** {@link #execPrefix} in its parts, for a shell that runs it from variables (the unshare init). */
    public ExecPrefix execPrefixParts(List<String> perl) {
        return ExecWrapper.prefix(perl, prctl, seccomp, HexFormat.of().formatHex(program));
    }

    /**
     * The words that put a command under the filter, by part: {@code PERL -e SCRIPT -- ARGS... COMMAND...}.
     *
     * @param perl   the perl interpreter as words
     * @param script the wrapper's script ({@link ExecWrapper})
     * @param args   the script's arguments before the command: the syscall numbers and the program in hex
     */
    public record ExecPrefix(List<String> perl, String script, List<String> args) {

        public ExecPrefix {
            perl = List.copyOf(perl);
            args = List.copyOf(args);
        }

        /** The prefix as one list of words. */
        public List<String> words() {
            List<String> words = new ArrayList<>(perl);
            words.addAll(List.of("-e", script, "--"));
            words.addAll(args);
            return words;
        }
    }

    @Override
    public String toString() {
        return "SyscallFilter[" + arch + ", " + rules + " rules, " + instructions() + " instructions]";
    }
}
