package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;

/** The one libc call Java lacks: {@code kill(2)}, behind {@link HostSignals}. */
interface LibC extends Library {

    LibC INSTANCE = Native.load("c", LibC.class);

    int ESRCH = 3;

    int kill(int pid, int signal) throws LastErrorException;
}
