package ai.chalk.compute.cli;

import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecProcess;
import ai.chalk.compute.sandbox.Sandbox;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.OptionalInt;
import org.jline.terminal.Attributes;
import org.jline.terminal.Size;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;
import org.jline.utils.NonBlockingInputStream;
import org.jspecify.annotations.Nullable;

/**
 * This terminal attached to a command on a PTY in a sandbox, as {@code ssh} or {@code docker exec -it} attach one:
 * this side in raw mode (every key, Ctrl-C included, goes to the sandbox), the remote terminal resized with this
 * one, output written as it comes. The terminal's settings are restored however the command ends.
 */
final class PtyShell {

    /** The shell to start: bash where the image has it, else sh, as a login-less interactive shell. */
    private static final String DEFAULT_SHELL =
            "if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi";

    private final Sandbox sandbox;
    private final @Nullable String program;
    private final @Nullable String workdir;

    PtyShell(Sandbox sandbox, @Nullable String program, @Nullable String workdir) {
        this.sandbox = sandbox;
        this.program = program;
        this.workdir = workdir;
    }

    /** Runs the shell until it exits; returns its exit status. */
    int attach() throws IOException {
        try (Terminal terminal = TerminalBuilder.builder()
                .name("chalk-compute")
                .system(true)
                .nativeSignals(true)
                .signalHandler(Terminal.SignalHandler.SIG_IGN)
                .build()) {
            Size size = terminal.getSize();
            int cols = size.getColumns() > 0 ? size.getColumns() : 80;
            int rows = size.getRows() > 0 ? size.getRows() : 24;
            Command command = (program == null ? Command.shell(DEFAULT_SHELL) : Command.shell(program))
                    .pty(cols, rows)
                    .env(
                            "TERM",
                            terminal.getType() == null || terminal.getType().startsWith("dumb")
                                    ? "xterm-256color"
                                    : terminal.getType());
            if (workdir != null) {
                command = command.workdir(workdir);
            }
            Attributes saved = terminal.getAttributes();
            try (ExecProcess process = sandbox.execStart(command)) {
                terminal.setAttributes(raw(saved));
                terminal.handle(Terminal.Signal.WINCH, s -> {
                    Size now = terminal.getSize();
                    if (now.getColumns() > 0 && now.getRows() > 0 && process.isAlive()) {
                        process.resize(now.getColumns(), now.getRows());
                    }
                });
                Thread keys = new Thread(() -> forwardKeys(terminal.input(), process), "chalk-compute-shell-keys");
                keys.setDaemon(true);
                keys.start();
                OptionalInt status = copyOutput(process, terminal.output());
                keys.interrupt();
                return status.orElse(ChalkComputeCli.FAILED);
            } finally {
                terminal.handle(Terminal.Signal.WINCH, Terminal.SignalHandler.SIG_IGN);
                terminal.setAttributes(saved);
                terminal.flush();
            }
        }
    }

    /** {@code cfmakeraw}: no echo, no line editing, no signals from keys, no output translation. */
    private static Attributes raw(Attributes saved) {
        Attributes raw = new Attributes(saved);
        raw.setLocalFlags(
                EnumSet.of(
                        Attributes.LocalFlag.ICANON,
                        Attributes.LocalFlag.ECHO,
                        Attributes.LocalFlag.ISIG,
                        Attributes.LocalFlag.IEXTEN),
                false);
        raw.setInputFlags(
                EnumSet.of(
                        Attributes.InputFlag.IXON,
                        Attributes.InputFlag.ICRNL,
                        Attributes.InputFlag.INLCR,
                        Attributes.InputFlag.IGNCR,
                        Attributes.InputFlag.ISTRIP,
                        Attributes.InputFlag.BRKINT),
                false);
        raw.setOutputFlag(Attributes.OutputFlag.OPOST, false);
        raw.setControlChar(Attributes.ControlChar.VMIN, 1);
        raw.setControlChar(Attributes.ControlChar.VTIME, 0);
        return raw;
    }

    /** The remote terminal's output to this one, until the command exits; its exit status. */
    private static OptionalInt copyOutput(ExecProcess process, OutputStream out) throws IOException {
        Iterator<ExecEvent> events = process.output().iterator();
        while (events.hasNext()) {
            ExecEvent event = events.next();
            if (event instanceof ExecEvent.PtyOutput pty) {
                out.write(pty.data());
                out.flush();
            } else if (event instanceof ExecEvent.Stdout stdout) {
                out.write(stdout.data());
                out.flush();
            } else if (event instanceof ExecEvent.Stderr stderr) {
                out.write(stderr.data());
                out.flush();
            } else if (event.isExited()) {
                return event.signal().isPresent()
                        ? OptionalInt.of(128 + event.signal().getAsInt())
                        : event.exitCode();
            }
        }
        return OptionalInt.empty();
    }

    /** Keys as typed, bytes as they come, to the command's terminal until it exits or this side closes. */
    private static void forwardKeys(InputStream in, ExecProcess process) {
        byte[] buffer = new byte[4096];
        try {
            while (process.isAlive() && !Thread.currentThread().isInterrupted()) {
                int n;
                if (in instanceof NonBlockingInputStream nonBlocking) {
                    // a timeout, so that this thread notices the command's end
                    n = nonBlocking.readBuffered(buffer, 0, buffer.length, 100);
                    if (n == NonBlockingInputStream.READ_EXPIRED) {
                        continue;
                    }
                } else {
                    n = in.read(buffer);
                }
                if (n < 0) {
                    process.closeStdin();
                    return;
                }
                byte[] keys = java.util.Arrays.copyOf(buffer, n);
                process.writeStdin(keys);
            }
        } catch (IOException | IllegalStateException e) {
            // this terminal closed, or the command ended while a key was on its way: nothing more to send
        }
    }
}
