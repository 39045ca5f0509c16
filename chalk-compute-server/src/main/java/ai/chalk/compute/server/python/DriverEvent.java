package ai.chalk.compute.server.python;

/** What the driver inside a sandbox reported, once {@link DriverFrames} has checked it. */
sealed interface DriverEvent {

    /** The driver started; {@code python} is the interpreter's version as it says. */
    record Ready(String python) implements DriverEvent {}

    /** Bytes the snippet wrote to its stdout or stderr. */
    record Output(boolean stderr, byte[] data) implements DriverEvent {}

    /**
     * One representation of something the snippet displayed, read whole; {@code reserved} bytes of the server's
     * artifact budget are held for it until {@link PythonInterpreter} releases them.
     *
     * @param role   {@code execute_result} (the value of the last expression) or {@code display_data}
     * @param bundle which display it belongs to: the representations of one value share it
     * @param chart  whether it is a captured matplotlib figure
     */
    record Artifact(String name, String mime, String role, int bundle, boolean chart, byte[] data, long reserved)
            implements DriverEvent {}

    /** An artifact not sent: too large for the call's limit or the server's, or the driver skipped it itself. */
    record Skipped(String name, String reason, long size) implements DriverEvent {}

    /** The exception that ended the snippet. */
    record CodeError(String name, String value, String traceback) implements DriverEvent {}

    /**
     * The snippet finished.
     *
     * @param status {@code ok}, {@code error}, {@code interrupted} or {@code exit} (it called sys.exit)
     */
    record Done(String executionId, String status) implements DriverEvent {}
}
