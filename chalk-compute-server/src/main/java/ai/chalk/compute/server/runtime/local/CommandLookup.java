package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.host.BeneathRoot;
import ai.chalk.compute.server.runtime.host.InRootLookup;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Finds the command of an exec inside a sandbox before anything is spawned, so that a missing command is a
 * {@link ProcessStartException} rather than an exit code, and a file without execute permission is told apart from
 * a missing one. Looked up by the kernel as inside the sandbox's root
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
            Optional<InRootLookup.Found> found = lookUp(root, cwd, command);
            if (found.filter(CommandLookup::executableFile).isEmpty()) {
                throw found.filter(f -> f.type() == BeneathRoot.Type.FILE).isPresent()
                        ? ProcessStartException.notExecutable(command, command)
                        : ProcessStartException.commandNotFound(command);
            }
            return command;
        }
        String notExecutable = null; // the first file of that name without execute permission, as a shell says
        for (String dir : (path == null ? LocalRuntime.DEFAULT_PATH : path).split(":")) {
            if (dir.isEmpty()) {
                continue;
            }
            Optional<InRootLookup.Found> found = lookUp(root, cwd, dir + "/" + command);
            if (found.filter(CommandLookup::executableFile).isPresent()) {
                // a name with '=' would be taken for a variable by env: name it by its path instead
                return command.contains("=") || root.toString().equals("/") ? dir + "/" + command : command;
            }
            if (notExecutable == null
                    && found.filter(f -> f.type() == BeneathRoot.Type.FILE).isPresent()) {
                notExecutable = dir + "/" + command;
            }
        }
        throw notExecutable != null
                ? ProcessStartException.notExecutable(command, notExecutable)
                : ProcessStartException.commandNotFound(command);
    }

    private static Optional<InRootLookup.Found> lookUp(Path root, String cwd, String path) {
        return InRootLookup.find(root, path.startsWith("/") ? path : cwd + "/" + path);
    }

    private static boolean executableFile(InRootLookup.Found f) {
        return f.type() == BeneathRoot.Type.FILE && f.executable();
    }
}
