package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

/** The libc terminal calls behind {@link RawTerminal}. */
interface TerminalCalls extends Library {

    TerminalCalls INSTANCE = Native.load("c", TerminalCalls.class);

    int tcgetattr(int fd, Pointer termios) throws LastErrorException;

    void cfmakeraw(Pointer termios);

    int tcsetattr(int fd, int when, Pointer termios) throws LastErrorException;
}
