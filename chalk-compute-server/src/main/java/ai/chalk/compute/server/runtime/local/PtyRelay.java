package ai.chalk.compute.server.runtime.local;

import java.util.Optional;

/**
 * The last step of a PTY exec in an isolated sandbox: the command gets a terminal of the sandbox's own {@code devpts}
 * instead of the host's terminal that the server opened for it, so {@code tty}, {@code ttyname()} and {@code ps} name
 * it ({@code /dev/pts/N} of the host does not exist in the sandbox). As container runtimes do, the terminal is made
 * inside the sandbox, after the capabilities are gone: this perl (module-free, as {@link SandboxCommands#EXEC_SCRIPT})
 * opens the sandbox's {@code /dev/ptmx} and gives the new terminal the host terminal's size. Only the inner terminal
 * may echo, edit lines and turn Ctrl-C into SIGINT, so the host terminal must be raw for all the bytes that pass:
 * the server makes it raw as it starts the exec ({@link #appliesTo}), before it hands out the process and so before any
 * input, and the relay makes it raw again itself before the command can write anything (the server's call may come
 * later than the command's first output on a loaded host; a cooked host terminal would turn the inner terminal's
 * {@code \r\n} into {@code \r\r\n}). It forks the command, which leads a new session on the inner terminal, and
 * stays as the process the server knows ({@code chalk-pty-relay}): it copies bytes both ways, passes window-size
 * changes on, forwards the signals the server sends (one that comes before the fork is passed on after it), and when
 * the command ends, copies what it wrote last and ends the same way (its exit code, or killed by the same signal), so
 * output is never cut short and a background process still holding the terminal does not keep the exec alive. It
 * holds no host descriptor but the host terminal, and the command holds none at all.
 *
 * <p>Where no terminal can be made in the sandbox (its {@code devpts} full, say), the command runs on the host's
 * terminal, without a session of its own: the relay waits until the server has made that terminal raw and then
 * cooks it again (what a new Linux terminal has: {@code \n} written as {@code \r\n}, echo, line editing, Ctrl-C as
 * SIGINT), so the command still gets a working terminal; {@code tty} then says "not a tty".
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
                """ + SandboxCommands.RAISE_OOM_SCORE + SandboxCommands.EXEC_ENTER + """
                my ($n, $unlock, $ctty) = (pack("I", 0), pack("i", 0), 0);
                sub termios { my $t = "\\0" x 64; return ioctl(STDIN, 0x5401, $t) ? $t : undef; }
                sub setflags { my ($t, $i, $o, $l, $raw) = @_; my @f = unpack("L4", $t);
                    if ($raw) { $f[0] &= ~$i; $f[1] &= ~$o; $f[3] &= ~$l; $f[2] = ($f[2] & ~0460) | 060;
                        substr($t, 17 + 5, 2) = pack("C2", 0, 1); }
                    else { $f[0] |= $i; $f[1] |= $o; $f[3] |= $l; }
                    substr($t, 0, 16) = pack("L4", @f); ioctl(STDIN, 0x5402, $t); }
                my $m;
                if (sysopen($m, "/dev/ptmx", 0402) && ioctl($m, 0x40045431, $unlock)
                        && ioctl($m, 0x80045430, $n)) {
                    $n = unpack("I", $n);
                    sub hostsize { my $w = pack("x8"); return ioctl(STDIN, 0x5413, $w) ? $w : undef; }
                    $SIG{WINCH} = sub { my $w = hostsize(); ioctl($m, 0x5414, $w) if defined $w; };
                    # pty4j sizes the host terminal only once its process runs: until then it is 0 x 0, a size the
                    # server never asks for, and a command that reads its size at once would be told that
                    for (1 .. 200) {
                        my $w = hostsize();
                        last unless defined $w && substr($w, 0, 4) eq pack("x4");
                        select(undef, undef, undef, 0.005);
                    }
                    $SIG{WINCH}->();
                    # cfmakeraw: no IGNBRK BRKINT PARMRK ISTRIP INLCR IGNCR ICRNL IXON, OPOST, ECHO ECHONL ICANON
                    # ISIG IEXTEN; 8 bits without parity; VMIN 1, VTIME 0
                    my $t = termios();
                    setflags($t, 02753, 01, 0100113, 1) if defined $t;
                    my ($child, @early) = (0);
                    my @forwarded = qw(TERM INT HUP QUIT USR1 USR2 ALRM CONT TSTP TTIN TTOU PIPE);
                    for my $sig (@forwarded) {
                        $SIG{$sig} = sub { if ($child > 0) { kill($_[0], $child); } else { push(@early, $_[0]); } };
                    }
                    $child = fork();
                    if (defined $child && $child > 0) {
                        $0 = "chalk-pty-relay";
                        kill($_, $child) for splice(@early);
                        $SIG{CHLD} = sub {};
                        # a signal (the command's SIGCHLD, one forwarded) ends a call early with EINTR (4): Perl's
                        # handlers do not restart them, and the terminal refuses a write while one is pending
                        sub put { my ($fh, $b) = @_; while (length $b) { my $w = syswrite($fh, $b);
                            if (!defined $w) { next if $! == 4; return 0; } substr($b, 0, $w) = ''; } return 1; }
                        # what was read, '' when nothing is there yet (EAGAIN, 11), undef at the end
                        sub take { my ($fh) = @_; while (1) { my $k = sysread($fh, my $b, 65536);
                            return $b if $k; return '' if !defined $k && $! == 11;
                            return undef unless !defined $k && $! == 4; } }
                        # an interrupted wait waits at most as long again in all: restarted whole, a signal every
                        # quarter second (forwarded ones, window sizes) kept the relay from seeing its command's end
                        sub ready { my ($rin, $win, $wait) = @_; while (1) {
                            my $r = select(my $rout = $rin, my $wout = $win, undef, $wait);
                            return ($rout, $wout) if $r > 0; return () unless $r < 0 && $! == 4;
                            $wait /= 2; return () if $wait < 0.001; } }
                        # the command's input waits here while its terminal is full (F_SETFL 4, O_NONBLOCK 04000): a
                        # write that blocked would stop the copy of its output, and a command that prints as it reads
                        # (cat, any echo) would then never read again
                        my $fl = fcntl($m, 3, 0);
                        fcntl($m, 4, $fl | 04000) if defined $fl;
                        my ($mf, $inf, $in, $out, $st, $pending) = (fileno($m), fileno(STDIN), 1, 1, undef, '');
                        while (1) {
                            # from the command's end on, a signal the server sends has no one to go to (the pid may
                            # soon be another process's) and must not kill the relay: the exec would seem killed by it
                            if (waitpid($child, 1) == $child) { $st = $?; $SIG{$_} = 'IGNORE' for @forwarded; last; }
                            my ($rin, $win) = ('', '');
                            vec($rin, $mf, 1) = 1 if $out;
                            vec($rin, $inf, 1) = 1 if $in && length($pending) < 65536;
                            vec($win, $mf, 1) = 1 if length $pending;
                            my ($rout, $wout) = ready($rin, $win, 0.25);
                            next unless defined $rout;
                            if ($out && vec($rout, $mf, 1)) {
                                my $b = take($m);
                                $out = defined $b && put(*STDOUT, $b);
                            }
                            if (vec($rout, $inf, 1)) {
                                my $b = take(*STDIN);
                                if (defined $b) { $pending .= $b; } else { $in = 0; }
                            }
                            if (length($pending) && vec($wout, $mf, 1)) {
                                my $w = syswrite($m, $pending);
                                if (defined $w) { substr($pending, 0, $w) = ''; }
                                elsif ($! != 4 && $! != 11) { $pending = ''; }
                            }
                        }
                        # the terminal's last bytes: all of them once no one holds it (then a read fails), else what
                        # comes within a moment (a background process may still write)
                        while ($out) {
                            my $rin = '';
                            vec($rin, $mf, 1) = 1;
                            my ($rout) = ready($rin, undef, 0.1);
                            last unless defined $rout;
                            my $b = take($m);
                            last unless defined $b && put(*STDOUT, $b);
                        }
                        if ($st & 127) {
                            $SIG{$_} = 'DEFAULT' for (@forwarded, 'CHLD', 'WINCH');
                            kill($st & 127, $$); select(undef, undef, undef, 1); exit(128 + ($st & 127));
                        }
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
                    } else {
                        print STDERR "chalk: cannot start the command: $!\\r\\n";
                        exit 126;
                    }
                } else {
                    # no terminal of the sandbox's own: the host's, cooked again once the server has made it raw
                    my $t;
                    for (1 .. 1000) {
                        $t = termios();
                        last unless defined $t && (unpack("x12 L", $t) & 2);
                        select(undef, undef, undef, 0.01);
                    }
                    setflags($t, 02400, 05, 0100013, 0) if defined $t;
                }
                """.formatted(nr)
                        + SandboxCommands.EXEC_RUN);
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
