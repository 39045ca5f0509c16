package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessSpec.TerminalSize;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.host.RawTerminal;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import com.pty4j.PtyProcess;
import com.pty4j.PtyProcessBuilder;
import com.pty4j.WinSize;
import com.pty4j.unix.UnixPtyProcess;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The PTY relay ({@link PtyRelay}): in both isolation modes the command's terminal is the sandbox's own, and the host
 * terminal the server opened passes bytes through unchanged however late the server makes it raw; where no terminal
 * can be made in the sandbox, the command still gets a cooked one.
 */
class PtyRelayTest {

    @RegisterExtension
    final ModeRuntimes runtimes = new ModeRuntimes();

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aPtyExecRunsOnATerminalOfTheSandboxsOwn(String mode) throws Exception {
        RuntimeSandbox sandbox = runtimes.start(mode).start(LocalTesting.spec());
        // whatever its root tries on the terminals' file system first: where it owned them (its root the host's),
        // a ptmx of mode 0 left every later exec with a terminal without one
        LocalTesting.sh(sandbox, "chmod 0 /dev/pts/ptmx /dev/pts; true");
        RuntimeProcess p = sandbox.exec(new ProcessSpec(
                "/bin/sh",
                List.of("-c", "t=$(tty) && test -c \"$t\" && echo \"own $t\"; ps -o tty= -p $$; stty size; exit 7"),
                Optional.empty(),
                Map.of(),
                Optional.of(new TerminalSize(90, 33))));
        CompletableFuture<String> out = drain(p.stdout());
        assertThat(p.onExit().get(20, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(7));
        // the inner terminal's line discipline only: one \r per line
        assertThat(out.get(5, TimeUnit.SECONDS))
                .containsPattern("own /dev/pts/[0-9]+\r\npts/[0-9]+\r\n33 90\r\n")
                .doesNotContain("\r\r");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void ctrlCAndSignalsReachTheCommandThroughTheRelay(String mode) throws Exception {
        RuntimeProcess p = shellOnATerminal(
                mode, "trap 'echo got-int' INT; echo ready; while :; do sleep 0.02; done", new TerminalSize(80, 24));
        StringBuilder seen = new StringBuilder();
        readUntil(p.stdout(), seen, "ready");
        // Ctrl-C, typed: the sandbox's terminal turns it into SIGINT for the command's process group
        p.stdin().write(3);
        p.stdin().flush();
        readUntil(p.stdout(), seen, "got-int");
        // a signal the server sends reaches the command and the exec ends as it did
        p.signal(15);
        assertThat(p.onExit().get(20, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(15));
    }

    /**
     * A signal that reaches the relay while it copies (the command's SIGCHLD as it exits, or one the server forwards)
     * ends its read, write or wait early with EINTR; the relay carries on, so no output is lost. Before, the copy
     * stopped there: on a loaded host, one PTY exec in thirty lost its whole output to the SIGCHLD of its own exit.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void signalsTheRelayForwardsDoNotCutTheOutputShort(String mode) throws Exception {
        RuntimeProcess p = shellOnATerminal(
                mode,
                "trap '' USR1; echo start; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); echo line$i; [ $((i % 300)) -ne 0 ] || sleep 0.05; done",
                new TerminalSize(80, 24));
        StringBuilder seen = new StringBuilder();
        readUntil(p.stdout(), seen, "start"); // the command ignores the signal from here on
        CompletableFuture<String> out = drain(p.stdout());
        int sent = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!p.onExit().isDone() && System.nanoTime() < deadline) {
            p.signal(10); // SIGUSR1, forwarded to the command, which ignores it
            sent++;
        }
        // a relay that stopped copying leaves the command blocked on a full terminal
        assertThat(p.onExit()).as("the command's end, %d signals sent", sent).isDone();
        assertThat(p.onExit().get()).isEqualTo(ExitStatus.exited(0));
        String all = seen + out.get(5, TimeUnit.SECONDS);
        assertThat(sent).as("signals sent while the command ran").isGreaterThan(20);
        assertThat(all.split("\r\n"))
                .as("lines after %d signals", sent)
                .hasSize(3001)
                .endsWith("line3000");
    }

    /**
     * Signals that keep coming after the command has ended (a client resizing, or signalling an exec it thinks runs)
     * do not keep the relay from seeing its end. It restarted an interrupted wait whole, so with a signal more often
     * than every quarter second the exec never ended; a CI run saw it under a flood of signals.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void signalsAfterTheCommandsEndDoNotKeepTheExecGoing(String mode) throws Exception {
        RuntimeProcess p =
                shellOnATerminal(mode, "trap '' USR1; echo start; sleep 0.3; exit 3", new TerminalSize(80, 24));
        readUntil(p.stdout(), new StringBuilder(), "start");
        CompletableFuture<String> out = drain(p.stdout());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!p.onExit().isDone() && System.nanoTime() < deadline) {
            p.signal(10);
            Thread.sleep(100);
        }
        assertThat(p.onExit()).as("the exec's end, with a signal every 100 ms").isDone();
        assertThat(p.onExit().get()).isEqualTo(ExitStatus.exited(3));
        out.get(5, TimeUnit.SECONDS);
    }

    /**
     * The server makes its terminal raw after pty4j has started the relay; on a loaded host that comes after the
     * command's first output, which a cooked host terminal would turn into {@code \r\r\n}: the relay makes it raw
     * itself first.
     */
    @Test
    void theHostTerminalPassesTheOutputUnchangedWhenTheServerIsLateToMakeItRaw() throws Exception {
        String out = relayOnTheHost(List.of(), 500);
        assertThat(out).contains("on /dev/pts/").contains("one\r\ntwo\r\n").doesNotContain("\r\r");
    }

    /**
     * A command that prints as it reads takes input of any size: the relay holds what its terminal cannot take yet and
     * keeps copying the output meanwhile. Before, its write to the full terminal blocked, the output stopped, the
     * command blocked on it and never read again: 200 KB pasted into {@code cat} (its output and the terminal's echo)
     * or here into a {@code sed} that writes each line eight times hung the exec after a few KB. (The echo is off
     * here: a terminal drops echoes it cannot write, so with it the output has no exact length.)
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aCommandThatPrintsAsItReadsTakesInputOfAnySize(String mode) throws Exception {
        RuntimeProcess p = shellOnATerminal(
                mode, "stty -echo && echo ready && exec sed 's/.*/&&&&&&&&/'", new TerminalSize(80, 24));
        StringBuilder seen = new StringBuilder();
        readUntil(p.stdout(), seen, "ready\r\n");
        CompletableFuture<String> out = drain(p.stdout());
        String line = "0123456789012345678901234567890123456789";
        CompletableFuture<Void> typed = CompletableFuture.runAsync(() -> {
            try {
                for (int i = 0; i < 5000; i++) {
                    p.stdin().write((line + "\n").getBytes(StandardCharsets.UTF_8));
                }
                p.stdin().write(4); // Ctrl-D: end of file
                p.stdin().flush();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        typed.get(30, TimeUnit.SECONDS);
        assertThat(p.onExit().get(30, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
        assertThat(seen + out.get(5, TimeUnit.SECONDS)).isEqualTo("ready\r\n" + (line.repeat(8) + "\r\n").repeat(5000));
    }

    /**
     * pty4j sizes the terminal only once its process runs, so the relay can start on a 0 x 0 terminal (a size the
     * server never asks for): it waits for the real size before the command starts, or a command that reads its size
     * at once ({@code stty size}, {@code tput cols}) was told 0 x 0 (seen under load).
     */
    @Test
    void theCommandStartsWithTheTerminalSizeTheServerSetsLate() throws Exception {
        PtyProcess p = startRelayOnTheHost(List.of(), "stty size", false); // 0 x 0 until set below
        CompletableFuture<String> out = drain(p.getInputStream());
        Thread.sleep(300);
        p.setWinSize(new WinSize(90, 33));
        RawTerminal.makeRaw(((UnixPtyProcess) p).getPty().getMasterFD());
        assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
        assertThat(out.get(5, TimeUnit.SECONDS)).isEqualTo("33 90\r\n");
    }

    /**
     * Without a terminal of the sandbox's own (here {@code /dev/ptmx} is {@code /dev/null}), the command runs on the
     * host terminal, cooked again after the server made it raw, late or not.
     */
    @Test
    void withoutATerminalOfItsOwnTheCommandGetsTheHostTerminalCooked() throws Exception {
        List<String> noPtmx = List.of(
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "/bin/sh",
                "-c",
                "mount --bind /dev/null /dev/ptmx && exec \"$@\"",
                "no-ptmx");
        for (int delayMillis : new int[] {0, 500}) {
            String out = relayOnTheHost(noPtmx, delayMillis);
            assertThat(out)
                    .as("server %d ms late", delayMillis)
                    .contains("one\r\ntwo\r\n")
                    .doesNotContain("\r\r");
        }
    }

    /**
     * The host has one pool of pseudo-terminals ({@code kernel.pty.max}, 4,096, a quarter of it kept for the host's own
     * instance) shared by every sandbox and container. A sandbox opening {@code /dev/ptmx} until it fails took them
     * all (3,072 here; its processes may each hold 16,384 files), and every other sandbox's PTY exec then lost its own
     * terminal. Its {@code devpts} now holds at most {@value SandboxDevices#PTYS} terminals, and another sandbox still
     * gets one of its own.
     */
    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare", "bubblewrap as host root", "unshare as host root"})
    void aSandboxCannotTakeEveryTerminalOfTheHost(String mode) throws Exception {
        LocalRuntime runtime = runtimes.start(mode);
        RuntimeSandbox hoarder = runtime.start(LocalTesting.spec());
        RuntimeProcess hoarding = hoarder.exec(new ProcessSpec(
                "perl",
                List.of(
                        "-e",
                        "my @t; while (@t < 5000 && open(my $f, '+<', '/dev/ptmx')) { push @t, $f }"
                                + " print scalar(@t), \" $!\\n\"; close STDOUT; sleep 120"),
                Optional.empty(),
                Map.of(),
                Optional.empty()));
        String said = new java.io.BufferedReader(
                        new java.io.InputStreamReader(hoarding.stdout(), StandardCharsets.UTF_8))
                .readLine();
        assertThat(said)
                .as("terminals the sandbox could open, and why it could not open more")
                .isEqualTo(SandboxDevices.PTYS + " No space left on device");
        RuntimeProcess other = runtime.start(LocalTesting.spec())
                .exec(new ProcessSpec(
                        "/bin/sh",
                        List.of("-c", "t=$(tty) && test -c \"$t\" && echo \"own $t\""),
                        Optional.empty(),
                        Map.of(),
                        Optional.of(new TerminalSize(80, 24))));
        CompletableFuture<String> out = drain(other.stdout());
        assertThat(other.onExit().get(20, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
        assertThat(out.get(5, TimeUnit.SECONDS)).containsPattern("own /dev/pts/[0-9]+\r\n");
        // the sandboxes' terminals are theirs alone: the host's mount table keeps none of them
        assertThat(ai.chalk.compute.server.runtime.local.image.OverlayMount.mountsUnder(runtimes.temp()))
                .noneMatch(m -> m.endsWith("pts"));
        hoarding.signal(9);
    }

    /** Runs a shell script on a terminal of {@code size} in a new sandbox of the isolation {@code mode}. */
    private RuntimeProcess shellOnATerminal(String mode, String script, TerminalSize size) throws Exception {
        RuntimeSandbox sandbox = runtimes.start(mode).start(LocalTesting.spec());
        return sandbox.exec(
                new ProcessSpec("/bin/sh", List.of("-c", script), Optional.empty(), Map.of(), Optional.of(size)));
    }

    /** Runs the relay script on the host as the server does, making the terminal raw {@code delayMillis} late. */
    private static String relayOnTheHost(List<String> prefix, int delayMillis) throws Exception {
        PtyProcess p = startRelayOnTheHost(prefix, "t=$(tty) && echo \"on $t\"; printf 'one\\ntwo\\n'", true);
        CompletableFuture<String> out = drain(p.getInputStream());
        Thread.sleep(delayMillis);
        RawTerminal.makeRaw(((UnixPtyProcess) p).getPty().getMasterFD());
        assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isZero();
        return out.get(5, TimeUnit.SECONDS);
    }

    /** Starts the relay script on the host as the server does, running {@code script}; sized 80 x 24 or not at all. */
    private static PtyProcess startRelayOnTheHost(List<String> prefix, String script, boolean sized) throws Exception {
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of("perl", "-e", PtyRelay.script().orElseThrow(), "--", "", "/bin/sh", "-c", script));
        PtyProcessBuilder builder = new PtyProcessBuilder(command.toArray(String[]::new))
                .setEnvironment(Map.of("PATH", LocalRuntime.DEFAULT_PATH))
                .setConsole(false)
                .setRedirectErrorStream(true);
        if (sized) {
            builder.setInitialColumns(80).setInitialRows(24);
        }
        return builder.start();
    }

    private static CompletableFuture<String> drain(InputStream in) {
        return CompletableFuture.supplyAsync(() -> {
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            byte[] buf = new byte[4096];
            try {
                for (int n; (n = in.read(buf)) > 0; ) {
                    all.write(buf, 0, n);
                }
            } catch (java.io.IOException e) {
                // a terminal's master reads EIO once the other side is gone: that is its end of file
            }
            return all.toString(StandardCharsets.UTF_8);
        });
    }

    private static void readUntil(InputStream in, StringBuilder seen, String wanted) throws Exception {
        byte[] buf = new byte[4096];
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!seen.toString().contains(wanted)) {
            assertThat(System.nanoTime())
                    .as("waiting for %s, saw %s", wanted, seen)
                    .isLessThan(deadline);
            int n = in.read(buf);
            assertThat(n).as("end of output before %s, saw %s", wanted, seen).isPositive();
            seen.append(new String(buf, 0, n, StandardCharsets.UTF_8));
        }
    }
}
