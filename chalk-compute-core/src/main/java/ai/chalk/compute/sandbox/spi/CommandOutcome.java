package ai.chalk.compute.sandbox.spi;

import java.util.List;

/** How a command a helper ran ended, and what it wrote; {@code ExecResult} is one. */
public interface CommandOutcome {

    /** The exit code: 0 for success; 128 + the signal's number when a signal killed it. */
    int exitCode();

    /** Whether it exited with code 0, not killed by a signal. */
    boolean success();

    /** Everything it wrote to standard output. */
    byte[] stdoutBytes();

    /** Its standard output as UTF-8 lines, without their line ends. */
    List<String> stdout();

    /** Its standard output as UTF-8 text. */
    String stdoutText();

    /** Its standard error as UTF-8 text. */
    String stderrText();
}
