package ai.chalk.compute.server.exec;

/** Which of a process's outputs a chunk came from. */
public enum OutputStreamKind {
    STDOUT,
    STDERR,
    PTY
}
