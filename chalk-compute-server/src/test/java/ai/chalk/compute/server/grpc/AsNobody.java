package ai.chalk.compute.server.grpc;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Another local user for the tests of what the server tells local users apart by: python3 run as user nobody (65534),
 * without this process's groups, its output and errors on one stream.
 */
final class AsNobody {

    private AsNobody() {}

    /** Starts {@code script} with {@code args} after it. */
    static Process python(String script, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }
}
