package ai.chalk.compute.server.runtime.local;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What removes a killed server's leftovers at once, not at its next start: a small shell started with the runtime,
 * in a session of its own, that waits on a pipe from the server. A server that closes normally tells it so and it
 * exits; a server killed outright ({@code SIGKILL}, the OOM killer) closes the pipe by dying, and the shell then
 * thaws and kills whatever is left in the groups of the sandboxes the server had (their inits die with the server, but
 * a frozen process cannot die until thawed), detaches their file systems (layers, id-mapped views, image roots) and
 * removes their directories and cgroups. It acts only on the sandboxes that existed when the server died, so a new
 * server started on the same directory meanwhile loses nothing.
 */
final class CleanupAfterServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(CleanupAfterServer.class);

    /** Arguments: the sandboxes directory, then the base directory of each cgroup hierarchy. */
    static final String SCRIPT = """
            S=$1; shift
            read -r said
            [ "$said" = closed ] && exit 0
            cd "$S" || exit 0
            ids=$(ls -A)
            for g in "$@"; do
              for id in $ids; do
                [ -f "$g/$id/freezer.state" ] && echo THAWED > "$g/$id/freezer.state"
                find "$g/$id" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do kill -9 "$p"; done
              done
            done 2>/dev/null
            sleep 1
            for id in $ids; do
              umount -l "$S/$id" 2>/dev/null
              rm -rf --one-file-system "$S/$id"
              for g in "$@"; do
                [ -d "$g/$id" ] && find "$g/$id" -depth -type d -exec rmdir {} \\; 2>/dev/null
              done
            done
            for g in "$@"; do rmdir "$g" 2>/dev/null; done
            exit 0
            """;

    private final Process shell;

    private CleanupAfterServer(Process shell) {
        this.shell = shell;
    }

    /** Starts the shell; without {@code setsid} on the host, it shares the server's session (a terminal's ^C). */
    static CleanupAfterServer start(HostTools tools, Path sandboxesDir, Collection<Path> cgroupBases)
            throws IOException {
        List<String> command = new ArrayList<>();
        tools.get("setsid").ifPresent(p -> command.add(p.toString()));
        command.addAll(List.of("/bin/sh", "-c", SCRIPT, "chalk-cleanup-after-server", sandboxesDir.toString()));
        cgroupBases.forEach(b -> command.add(b.toString()));
        ProcessBuilder pb = new ProcessBuilder(command).directory(new java.io.File("/"))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().clear();
        pb.environment().put("PATH", LocalRuntime.DEFAULT_PATH);
        pb.environment().put("LC_ALL", "C");
        return new CleanupAfterServer(pb.start());
    }

    /** The server closed normally (its sandboxes are gone): the shell exits without doing anything. */
    @Override
    public void close() {
        try (OutputStream in = shell.getOutputStream()) {
            in.write("closed\n".getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
            log.debug("The cleanup shell ended early: {}", e.toString());
        }
    }
}
