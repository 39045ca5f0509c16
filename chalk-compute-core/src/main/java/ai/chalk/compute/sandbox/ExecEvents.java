package ai.chalk.compute.sandbox;

import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * The events of a running command, consumed once as they happen: a sandbox's {@link ExecStream}, or a code
 * sandbox's process. Iterate over it or use {@link #stream()}; {@link #close()} stops the command if it still runs.
 */
public interface ExecEvents extends Iterable<ExecEvent>, AutoCloseable {

    /**
     * The events not consumed yet, as a sequential stream; closing the stream closes this object.
     *
     * @return the events not consumed yet
     */
    default Stream<ExecEvent> stream() {
        return StreamSupport.stream(
                        Spliterators.spliteratorUnknownSize(iterator(), Spliterator.ORDERED | Spliterator.NONNULL),
                        false)
                .onClose(this::close);
    }

    /** Stops the command if it still runs and ends the events. */
    @Override
    void close();
}
