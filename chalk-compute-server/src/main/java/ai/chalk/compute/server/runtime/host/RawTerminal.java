package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import java.io.IOException;

/**
 * Puts a terminal in raw mode through its master side (on Linux a master's terminal settings are its slave's): no
 * echo, no line editing, no signals from keys, bytes passed as they are. For a terminal that only relays to another
 * one, which does all of that itself.
 */
public final class RawTerminal {

    /** Larger than any libc's {@code struct termios} (60 bytes with glibc). */
    private static final int TERMIOS_BYTES = 256;

    private RawTerminal() {}

    /** Makes the terminal whose master is {@code masterFd} raw, at once. */
    public static void makeRaw(int masterFd) throws IOException {
        try (Memory termios = new Memory(TERMIOS_BYTES)) {
            termios.clear();
            TerminalCalls.INSTANCE.tcgetattr(masterFd, termios);
            TerminalCalls.INSTANCE.cfmakeraw(termios);
            TerminalCalls.INSTANCE.tcsetattr(masterFd, 0, termios);
        } catch (LastErrorException e) {
            throw new IOException("cannot make the terminal raw: " + e.getMessage(), e);
        }
    }
}
