package ai.chalk.compute.server.runtime.seccomp;

import java.util.List;

/**
 * Puts a process under the sandbox filter and executes its command in its place, for the processes that enter a
 * running sandbox ({@code nsenter} does not pass the init's filter on). There is no C compiler at run time, and perl
 * is on every Debian host ({@code perl-base} is essential), so it is a perl one-liner that loads no module (in an image
 * sandbox perl's module path is the image's): {@code prctl(PR_SET_NO_NEW_PRIVS)}, {@code prctl(PR_SET_DUMPABLE, 0)},
 * {@code seccomp(SECCOMP_SET_MODE_FILTER)}, then {@code exec}. The syscall numbers come from libseccomp, and the
 * program rides on the command line in hex, so nothing has to be visible inside the sandbox's file system.
 *
 * <p>Where it goes: after the namespace entry and <em>before</em> capabilities are dropped
 * ({@code nsenter ... -- WRAPPER setpriv --bounding-set=-all ... -- env -i ... COMMAND}). The filter allows
 * {@code ptrace}, as Docker's does, so a capability-less process in a sandbox that is not yet filtered could be
 * traced by sandbox code and made to skip the filter; a process that still holds capabilities the sandbox lacks cannot
 * be traced (the kernel refuses a tracer whose capabilities are not a superset), and after the wrapper nothing is
 * unfiltered. Everything after it (setpriv, setsid, env, the spare exec helper) works under the filter.
 * Since it runs with capabilities inside the sandbox's root, start it with a clean environment ({@code LC_ALL=C} and
 * no {@code PERL5OPT}, {@code PERL5LIB}, {@code PERLLIB}, {@code LANG} or other {@code LC_*}): perl honours
 * {@code PERL5OPT=-MModule}, and a locale other than C makes libc read locale and gconv files from the sandbox's
 * {@code /usr}. So started, perl opens only its libraries, {@code /dev/urandom} and {@code /dev/null}.
 * Exit status 125: the filter could not be installed; 127: the command could not be executed.
 */
final class ExecWrapper {

    /**
     * {@code @ARGV}: the prctl and seccomp syscall numbers, the program in hex, the command. {@code struct sock_fprog}
     * is an unsigned short count, padding to a pointer's alignment, and a pointer ({@code P} packs the address of the
     * string {@code $bpf}, which lives until the call). Numbers from {@code @ARGV} get {@code + 0}: {@code syscall}
     * passes a string as a pointer.
     */
    static final String SCRIPT = """
            $0 = "chalk-seccomp";
            my ($prctl, $seccomp, $hex) = splice(@ARGV, 0, 3);
            my $bpf = pack("H*", $hex);
            my $fprog = pack("S x![P] P", length($bpf) / 8, $bpf);
            syscall($prctl + 0, 38, 1, 0, 0, 0) == 0
                && syscall($prctl + 0, 4, 0, 0, 0, 0) == 0
                && syscall($seccomp + 0, 1, 0, $fprog) == 0
                or do { print STDERR "chalk: cannot install the sandbox's syscall filter: $!\\n"; exit 125 };
            exec { $ARGV[0] } @ARGV;
            print STDERR "chalk: cannot run $ARGV[0]: $!\\n";
            exit 127;
            """;

    private ExecWrapper() {}

    static SyscallFilter.ExecPrefix prefix(List<String> perl, int prctl, int seccomp, String programHex) {
        if (perl.isEmpty()) {
            throw new IllegalArgumentException(
                    "the syscall filter's exec wrapper needs perl (apt-get install perl-base)");
        }
        return new SyscallFilter.ExecPrefix(
                perl, SCRIPT, List.of(Integer.toString(prctl), Integer.toString(seccomp), programHex));
    }
}
