package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.host.BeneathRoot;
import ai.chalk.compute.server.runtime.host.InRootLookup;
import java.nio.file.Path;

/**
 * Finds the command of an exec inside a sandbox before anything is spawned, so that a missing command is a
 * {@link ProcessStartException} rather than an exit code. Looked up by the kernel as inside the sandbox's root
 * ({@link InRootLookup#find}): a link the sandbox swaps in meanwhile never makes the server look at, and so tell
 * the sandbox about, a host path.
 */
final class CommandLookup {

    private CommandLookup() {}

    /**
     * What to execute for {@code command}: itself when it names a path, else the first executable file of that name
     * on {@code path} (the process's PATH; the runtime's default when it has none).
     *
     * @param root the sandbox's root as the host sees it ({@code /} for a sandbox without isolation)
     * @param cwd  the process's working directory, for relative names
     */
    static String resolve(Path root, String cwd, String command, String path) throws ProcessStartException {
        if (command.contains("/")) {
            if (!isExecutableFile(root, cwd, command)) {
                throw new ProcessStartException("command not found in sandbox: " + command);
            }
            return command;
        }
        for (String dir : (path == null ? LocalRuntime.DEFAULT_PATH : path).split(":")) {
            if (dir.isEmpty()) {
                continue;
            }
            if (isExecutableFile(root, cwd, dir + "/" + command)) {
                // a name with '=' would be taken for a variable by env: name it by its path instead
                return command.contains("=") || root.toString().equals("/") ? dir + "/" + command : command;
            }
        }
        throw new ProcessStartException("command not found in sandbox: " + command);
    }

    private static boolean isExecutableFile(Path root, String cwd, String path) {
        String absolute = path.startsWith("/") ? path : cwd + "/" + path;
        return InRootLookup.find(root, absolute)
                .filter(f -> f.type() == BeneathRoot.Type.FILE && f.executable())
                .isPresent();
    }
}
