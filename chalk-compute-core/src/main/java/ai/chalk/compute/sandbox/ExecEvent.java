package ai.chalk.compute.sandbox;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * One thing that happened to a running command, in the order it happened: it started, it wrote
 * to stdout, stderr or its terminal, or it exited.
 *
 * <pre>{@code
 * try (ExecStream events = sandbox.execStream("make", "build")) {
 *     for (ExecEvent event : events) {
 *         if (event.stdoutText() != null) System.out.print(event.stdoutText());
 *         if (event instanceof ExecEvent.Exited exited) System.out.println("exit status " + exited.status());
 *     }
 * }
 * }</pre>
 *
 * <p>Output chunks arrive as the process writes them; a chunk may end in the middle of a line or
 * of a multi-byte UTF-8 character, so decode the bytes yourself when that matters.
 */
public sealed interface ExecEvent {

    /** The stdout chunk decoded as UTF-8, or {@code null} when this is not a {@link Stdout} event. */
    default String stdoutText() {
        return null;
    }

    /** The stderr chunk decoded as UTF-8, or {@code null} when this is not a {@link Stderr} event. */
    default String stderrText() {
        return null;
    }

    /** The terminal output decoded as UTF-8, or {@code null} when this is not a {@link PtyOutput} event. */
    default String ptyText() {
        return null;
    }

    /** Whether this is the {@link Exited} event, always the last one. */
    default boolean isExited() {
        return false;
    }

    /** The exit code if this is an {@link Exited} event for a process that exited normally; otherwise empty. */
    default OptionalInt exitCode() {
        return OptionalInt.empty();
    }

    /** The signal number if this is an {@link Exited} event for a process killed by a signal; otherwise empty. */
    default OptionalInt signal() {
        return OptionalInt.empty();
    }

    /**
     * The process started.
     *
     * @param pid its process id inside the sandbox
     */
    record Started(long pid) implements ExecEvent {}

    /**
     * A chunk the process wrote to standard output.
     *
     * @param data the bytes written
     */
    record Stdout(byte[] data) implements ExecEvent {
        /** Creates the event; the bytes are copied. */
        public Stdout {
            data = HandedOver.keep(data);
        }

        /** The bytes written (a copy). */
        @Override
        public byte[] data() {
            return data.clone();
        }

        @Override
        public String stdoutText() {
            return new String(data, StandardCharsets.UTF_8);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Stdout other && Arrays.equals(data, other.data);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(data);
        }

        @Override
        public String toString() {
            return "Stdout[" + data.length + " bytes]";
        }
    }

    /**
     * A chunk the process wrote to standard error.
     *
     * @param data the bytes written
     */
    record Stderr(byte[] data) implements ExecEvent {
        /** Creates the event; the bytes are copied. */
        public Stderr {
            data = HandedOver.keep(data);
        }

        /** The bytes written (a copy). */
        @Override
        public byte[] data() {
            return data.clone();
        }

        @Override
        public String stderrText() {
            return new String(data, StandardCharsets.UTF_8);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Stderr other && Arrays.equals(data, other.data);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(data);
        }

        @Override
        public String toString() {
            return "Stderr[" + data.length + " bytes]";
        }
    }

    /**
     * A chunk the process wrote to its terminal, for commands run with a PTY (stdout and stderr
     * are merged by the terminal).
     *
     * @param data the bytes written
     */
    record PtyOutput(byte[] data) implements ExecEvent {
        /** Creates the event; the bytes are copied. */
        public PtyOutput {
            data = HandedOver.keep(data);
        }

        /** The bytes written (a copy). */
        @Override
        public byte[] data() {
            return data.clone();
        }

        @Override
        public String ptyText() {
            return new String(data, StandardCharsets.UTF_8);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof PtyOutput other && Arrays.equals(data, other.data);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(data);
        }

        @Override
        public String toString() {
            return "PtyOutput[" + data.length + " bytes]";
        }
    }

    /**
     * The process ended: normally with an exit code, or killed by a signal.
     *
     * @param exitCode the exit code, when it exited normally
     * @param signal   the signal number, when a signal ended it
     */
    record Exited(OptionalInt exitCode, OptionalInt signal) implements ExecEvent {
        /** Creates the event. */
        public Exited {
            Objects.requireNonNull(exitCode, "exitCode");
            Objects.requireNonNull(signal, "signal");
        }

        @Override
        public boolean isExited() {
            return true;
        }

        /**
         * The exit status as a shell reports it: the exit code, or 128 + the signal number when a
         * signal ended the process (-1 if the server reported neither).
         */
        public int status() {
            if (exitCode.isPresent()) {
                return exitCode.getAsInt();
            }
            return signal.isPresent() ? 128 + signal.getAsInt() : -1;
        }
    }
}
