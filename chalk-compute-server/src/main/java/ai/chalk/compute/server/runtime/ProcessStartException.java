package ai.chalk.compute.server.runtime;

/** A process could not be started in a sandbox; the message is shown to the user as it is. */
public class ProcessStartException extends Exception {
    public ProcessStartException(String message) {
        super(message);
    }

    public ProcessStartException(String message, Throwable cause) {
        super(message, cause);
    }

    /** Nothing of that name is there (on the PATH, or at the path given): every runtime says it in these words. */
    public static ProcessStartException commandNotFound(String command) {
        return new ProcessStartException("command not found in sandbox: " + command);
    }

    /**
     * The command names a file that is there but has no execute permission ({@code file} is where it was found,
     * the command itself when it is a path): a different mistake from a missing command, with a different fix.
     */
    public static ProcessStartException notExecutable(String command, String file) {
        return new ProcessStartException("permission denied in sandbox: " + command
                + (file.equals(command) ? "" : " (" + file + ")")
                + " is not executable; make it executable (chmod +x " + file + ") or run it with its interpreter"
                + " (for example sh " + file + ")");
    }
}
