package ai.chalk.compute.server.runtime.local;

import java.util.Optional;

/**
 * The last step of a PTY exec in an isolated sandbox: the command gets a terminal of the sandbox's own {@code devpts}
 * instead of the host's terminal that the server opened for it, so {@code tty}, {@code ttyname()} and {@code ps} name
 * it ({@code /dev/pts/N} of the host does not exist in the sandbox). As container runtimes do, the terminal is made
 * inside the sandbox, after the capabilities are gone: this perl (module-free, as {@link SandboxCommands#EXEC_SCRIPT})
 * opens the sandbox's {@code /dev/ptmx} and gives the new terminal the host terminal's size; the server made the host
 * terminal raw as it started the exec ({@link #appliesTo}), before any input, so only the inner one echoes and turns
 * Ctrl-C into SIGINT. It forks the command, which leads a new session on
 * the inner terminal, and stays as the process the server knows ({@code chalk-pty-relay}): it copies bytes both ways,
 * passes window-size changes on, forwards the signals the server sends, and when the command ends, copies what it
 * wrote last and ends the same way (its exit code, or killed by the same signal), so output is never cut short and
 * a background process still holding the terminal does not keep the exec alive. Where the sandbox has no {@code /dev/ptmx} to open,
 * the command runs on the host's terminal, without a session of its own.
 */
final class PtyRelay {

    /** Built once: every PTY exec asks for it twice (the command line and the raw switch). */
    private static final Optional<String> SCRIPT = build();

    private PtyRelay() {}

    /**
     * Whether a PTY exec entering an isolated sandbox runs through the relay: the exec helpers include perl and the
     * architecture's {@code setsid} syscall number is known here.
     */
    static boolean appliesTo(SandboxCommands.Helpers helpers) {
        return !helpers.perl().isEmpty() && SCRIPT.isPresent();
    }

    /** The script, or empty on an architecture whose {@code setsid} syscall number is not known here. */
    static Optional<String> script() {
        return SCRIPT;
    }

    private static Optional<String> build() {
        return setsidSyscall()
                .map(nr -> """
                $0 = "chalk-exec";
                """ + SandboxCommands.EXEC_ENTER + """
                my ($n, $ws, $unlock, $ctty) = (pack("I", 0), pack("x8"), pack("i", 0), 0);
                my $m;
                if (sysopen($m, "/dev/ptmx", 0402) && ioctl($m, 0x40045431, $unlock)
                        && ioctl($m, 0x80045430, $n)) {
                    $n = unpack("I", $n);
                    ioctl(STDIN, 0x5413, $ws) and ioctl($m, 0x5414, $ws);
                    my $child = fork();
                    if (defined $child && $child > 0) {
                        $0 = "chalk-pty-relay";
                        my @forwarded = qw(TERM INT HUP QUIT USR1 USR2 ALRM CONT TSTP TTIN TTOU PIPE);
                        for my $sig (@forwarded) { $SIG{$sig} = sub { kill($_[0], $child); }; }
                        $SIG{CHLD} = sub {};
                        $SIG{WINCH} = sub { my $w = pack("x8"); ioctl(STDIN, 0x5413, $w) and ioctl($m, 0x5414, $w); };
                        sub put { my ($fh, $b) = @_; while (length $b) { my $w = syswrite($fh, $b);
                            return 0 unless defined $w; substr($b, 0, $w) = ''; } return 1; }
                        my ($mf, $inf, $in, $out, $st) = (fileno($m), fileno(STDIN), 1, 1, undef);
                        while (1) {
                            if (waitpid($child, 1) == $child) { $st = $?; last; }
                            my $rin = '';
                            vec($rin, $mf, 1) = 1 if $out;
                            vec($rin, $inf, 1) = 1 if $in;
                            my $r = select(my $rout = $rin, undef, undef, 0.25);
                            next if $r <= 0;
                            if ($out && vec($rout, $mf, 1)) {
                                my $k = sysread($m, my $b, 65536);
                                if ($k) { put(*STDOUT, $b) or $out = 0; } else { $out = 0; }
                            }
                            if ($in && vec($rout, $inf, 1)) {
                                my $k = sysread(STDIN, my $b, 65536);
                                if ($k) { put($m, $b); } else { $in = 0; }
                            }
                        }
                        while ($out) {
                            my $rin = '';
                            vec($rin, $mf, 1) = 1;
                            last unless select(my $rout = $rin, undef, undef, 0.02) > 0;
                            my $k = sysread($m, my $b, 65536);
                            last unless $k && put(*STDOUT, $b);
                        }
                        $SIG{$_} = 'DEFAULT' for (@forwarded, 'CHLD', 'WINCH');
                        if ($st & 127) { kill($st & 127, $$); select(undef, undef, undef, 1); exit(128 + ($st & 127)); }
                        exit($st >> 8);
                    }
                    if (defined $child) {
                        close($m);
                        syscall(%d);
                        sysopen(my $s, "/dev/pts/$n", 2)
                            or do { print STDERR "chalk: cannot open the sandbox's terminal: $!\\n"; exit 125 };
                        ioctl($s, 0x540E, $ctty);
                        open(STDIN, "<&", $s);
                        open(STDOUT, ">&", $s);
                        open(STDERR, ">&", $s);
                        close($s);
                    }
                }
                """.formatted(nr) + SandboxCommands.EXEC_RUN);
    }

    /** {@code setsid}'s syscall number on this machine's architecture (the sandbox's is the host's). */
    private static Optional<Integer> setsidSyscall() {
        return switch (System.getProperty("os.arch")) {
            case "amd64", "x86_64" -> Optional.of(112);
            case "aarch64" -> Optional.of(157);
            default -> Optional.empty();
        };
    }
}
