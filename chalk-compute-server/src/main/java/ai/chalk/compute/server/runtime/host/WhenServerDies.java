package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What removes a killed server's leftovers at once, not at its next start: a small shell started with the server, in
 * a session of its own, that waits on a pipe from it. A server that closes normally says so ({@link #close}) and the
 * shell exits; a server killed outright ({@code SIGKILL}, the OOM killer) closes the pipe by dying, and the shell then
 * runs its cleanup script.
 */
public final class WhenServerDies implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(WhenServerDies.class);
    private static final String PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

    private final Process shell;

    private WhenServerDies(Process shell) {
        this.shell = shell;
    }

    /**
     * Starts the shell.
     *
     * @param name    its {@code $0}, which names it in the process list
     * @param script  the cleanup, a POSIX shell script run with {@code args} as its arguments
     * @param setsid  the host's setsid (without it the shell shares the server's session, and a terminal's ^C)
     */
    public static WhenServerDies start(String name, String script, List<String> args, Optional<Path> setsid)
            throws IOException {
        List<String> command = new ArrayList<>();
        setsid.ifPresent(p -> command.add(p.toString()));
        command.addAll(List.of("/bin/sh", "-c", "read -r said; [ \"$said\" = closed ] && exit 0\n" + script, name));
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(new java.io.File("/"))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().clear();
        pb.environment().put("PATH", PATH);
        pb.environment().put("LC_ALL", "C");
        return new WhenServerDies(pb.start());
    }

    /** Starts the shell with the host's {@code /usr/bin/setsid}, where there is one (see the other form). */
    public static WhenServerDies start(String name, String script, List<String> args) throws IOException {
        return start(name, script, args, Optional.of(Path.of("/usr/bin/setsid")).filter(Files::isExecutable));
    }

    /** The server closed normally (it cleaned up itself): the shell exits without doing anything. */
    @Override
    public void close() {
        try (OutputStream in = shell.getOutputStream()) {
            in.write("closed\n".getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
            log.debug("The cleanup shell ended early: {}", e.toString());
        }
    }
}
